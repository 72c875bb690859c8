// aclCreateTensor and its getters, and aclBoolArray: what is kept, what is refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"

namespace {

TEST(Tensor, GettersReturnWhatWasCreated) {
    const int64_t dims[3] = {2, 3, 4}, strides[3] = {1, 2, 6}, storage[1] = {30};
    std::vector<float> data(30);
    aclTensor* t = aclCreateTensor(dims, 3, ACL_FLOAT16, strides, 5, ACL_FORMAT_NCDHW, storage, 1, data.data());
    ASSERT_NE(t, nullptr);
    int64_t* values = nullptr;
    uint64_t count = 0;
    ASSERT_EQ(aclGetViewShape(t, &values, &count), ACLNN_SUCCESS);
    EXPECT_EQ(std::vector<int64_t>(values, values + count), std::vector<int64_t>({2, 3, 4}));
    delete[] values;
    ASSERT_EQ(aclGetViewStrides(t, &values, &count), ACLNN_SUCCESS);
    EXPECT_EQ(std::vector<int64_t>(values, values + count), std::vector<int64_t>({1, 2, 6}));
    delete[] values;
    ASSERT_EQ(aclGetStorageShape(t, &values, &count), ACLNN_SUCCESS);
    EXPECT_EQ(std::vector<int64_t>(values, values + count), std::vector<int64_t>({30}));
    delete[] values;
    int64_t offset = 0;
    ASSERT_EQ(aclGetViewOffset(t, &offset), ACLNN_SUCCESS);
    EXPECT_EQ(offset, 5);
    aclFormat format = ACL_FORMAT_UNDEFINED;
    ASSERT_EQ(aclGetFormat(t, &format), ACLNN_SUCCESS);
    EXPECT_EQ(format, ACL_FORMAT_NCDHW);
    aclDataType type = ACL_DT_UNDEFINED;
    ASSERT_EQ(aclGetDataType(t, &type), ACLNN_SUCCESS);
    EXPECT_EQ(type, ACL_FLOAT16);
    EXPECT_EQ(aclGetViewShape(nullptr, &values, &count), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclGetViewShape(t, nullptr, &count), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclGetFormat(t, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(Tensor, NullStridesMeanContiguous) {
    const int64_t dims[3] = {2, 3, 4}, storage[1] = {24};
    aclTensor* t = aclCreateTensor(dims, 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage, 1, nullptr);
    ASSERT_NE(t, nullptr);
    int64_t* strides = nullptr;
    uint64_t count = 0;
    ASSERT_EQ(aclGetViewStrides(t, &strides, &count), ACLNN_SUCCESS);
    EXPECT_EQ(std::vector<int64_t>(strides, strides + count), std::vector<int64_t>({12, 4, 1}));
    delete[] strides;
    aclDestroyTensor(t);
}

TEST(Tensor, ViewOutsideStorageIsRefused) {
    const int64_t dims[2] = {3, 4}, strides[2] = {4, 1}, small[1] = {11}, exact[1] = {12};
    EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, small, 1, nullptr), nullptr);
    const char* message = aclGetRecentErrMsg();
    ASSERT_NE(message, nullptr);
    EXPECT_NE(std::string(message).find("outside its storage"), std::string::npos);
    EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, strides, 1, ACL_FORMAT_ND, exact, 1, nullptr), nullptr);  // offset
    aclTensor* fits = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, exact, 1, nullptr);
    EXPECT_NE(fits, nullptr);
    aclDestroyTensor(fits);
}

TEST(Tensor, InconsistentArgumentsAreRefused) {
    const int64_t dims[2] = {3, 4}, negative_dims[2] = {3, -1}, negative_strides[2] = {-4, 1}, strides[2] = {4, 1},
                  storage[1] = {12}, huge_dims[3] = {INT64_MAX / 2, 4, 1};
    EXPECT_EQ(aclCreateTensor(negative_dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage, 1, nullptr), nullptr);
    EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, negative_strides, 8, ACL_FORMAT_ND, storage, 1, nullptr), nullptr);
    EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, strides, -1, ACL_FORMAT_ND, storage, 1, nullptr), nullptr);
    EXPECT_EQ(aclCreateTensor(nullptr, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, nullptr), nullptr);
    EXPECT_EQ(aclCreateTensor(dims, 2, static_cast<aclDataType>(99), strides, 0, ACL_FORMAT_ND, storage, 1, nullptr),
              nullptr);
    EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, static_cast<aclFormat>(98), storage, 1, nullptr), nullptr);
    EXPECT_EQ(aclCreateTensor(huge_dims, 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, huge_dims, 3, nullptr), nullptr);
    const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    EXPECT_EQ(aclCreateTensor(nine, 9, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nine, 9, nullptr), nullptr);
}

TEST(Tensor, EmptyViewNeedsNoStorage) {
    const int64_t dims[2] = {0, 4}, storage[1] = {0};
    aclTensor* t = aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage, 1, nullptr);
    EXPECT_NE(t, nullptr);
    aclDestroyTensor(t);
}

TEST(BoolArray, CopiesValues) {
    bool values[3] = {true, false, true};
    aclBoolArray* a = aclCreateBoolArray(values, 3);
    ASSERT_NE(a, nullptr);
    values[0] = false;
    uint64_t size = 0;
    EXPECT_EQ(aclGetBoolArraySize(a, &size), ACLNN_SUCCESS);
    EXPECT_EQ(size, 3u);
    EXPECT_EQ(aclDestroyBoolArray(a), ACLNN_SUCCESS);
    EXPECT_EQ(aclCreateBoolArray(nullptr, 2), nullptr);
    EXPECT_EQ(aclGetBoolArraySize(nullptr, &size), ACLNN_ERR_PARAM_NULLPTR);
}

}  // namespace
