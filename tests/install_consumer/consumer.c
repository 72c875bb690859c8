/* A C program that uses gridsampler3d as an installed package: the headers compile as C,
 * the library links, one forward sample of a 2x2x2 volume at its centre is the mean, and the
 * identity affine warp with aligned corners gives the volume back. */
#include <stdio.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "gridsampler3d/cpu_device.h"
#include "gridsampler3d/warp3d.h"

int main(void) {
    float volume[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    float grid[3] = {0, 0, 0};
    float out[1] = {-1};
    const int64_t volume_dims[5] = {1, 1, 2, 2, 2}, grid_dims[5] = {1, 1, 1, 1, 3}, out_dims[5] = {1, 1, 1, 1, 1};
    const int64_t volume_storage[1] = {8}, grid_storage[1] = {3}, out_storage[1] = {1};
    aclrtStream stream = NULL;
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&stream) != ACL_SUCCESS)
        return 1;
    if (gs3dSetNumThreads(1) != ACL_SUCCESS) return 3; /* our extension header compiles as C too */
    aclTensor* input = aclCreateTensor(volume_dims, 5, ACL_FLOAT, NULL, 0, ACL_FORMAT_NCDHW, volume_storage, 1, volume);
    aclTensor* g = aclCreateTensor(grid_dims, 5, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, grid_storage, 1, grid);
    aclTensor* o = aclCreateTensor(out_dims, 5, ACL_FLOAT, NULL, 0, ACL_FORMAT_NCDHW, out_storage, 1, out);
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = NULL;
    aclnnStatus status = aclnnGridSampler3DGetWorkspaceSize(input, g, 0, 0, false, o, &workspace_size, &executor);
    if (status == ACLNN_SUCCESS) status = aclnnGridSampler3D(NULL, workspace_size, executor, stream);
    if (status != ACLNN_SUCCESS || aclrtSynchronizeStream(stream) != ACL_SUCCESS) return 2;
    printf("centre sample %g\n", out[0]);

    float theta[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, warped[8] = {0};
    const int64_t theta_dims[3] = {1, 3, 4}, theta_storage[1] = {12};
    aclTensor* t = aclCreateTensor(theta_dims, 3, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, theta_storage, 1, theta);
    aclTensor* w = aclCreateTensor(volume_dims, 5, ACL_FLOAT, NULL, 0, ACL_FORMAT_NCDHW, volume_storage, 1, warped);
    void* workspace = NULL;
    status = gs3dAffineWarp3DGetWorkspaceSize(input, t, 0, 0, true, w, &workspace_size, &executor);
    if (status == ACLNN_SUCCESS && workspace_size > 0 && aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_NORMAL_ONLY) != ACL_SUCCESS)
        return 4;
    if (status == ACLNN_SUCCESS) status = gs3dAffineWarp3D(workspace, workspace_size, executor, stream);
    if (status != ACLNN_SUCCESS || aclrtSynchronizeStream(stream) != ACL_SUCCESS) return 5;
    for (int i = 0; i < 8; ++i)
        if (warped[i] != volume[i]) return 6;
    printf("identity affine warp: the volume back\n");
    aclrtFree(workspace);
    aclDestroyTensor(t);
    aclDestroyTensor(w);
    aclDestroyTensor(input);
    aclDestroyTensor(g);
    aclDestroyTensor(o);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return out[0] == 3.5f ? 0 : 3;
}
