"""The Python arguments of grid_sample, as torch.nn.functional.grid_sample spells them, turned
into the C API's codes; and the layout decisions shared by the torch and NumPy front ends."""

INTERPOLATION_CODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}  # bicubic: tricubic on 5-D inputs
PADDING_CODES = {"zeros": 0, "border": 1, "reflection": 2}


def interpolation_code(mode):
    if mode not in INTERPOLATION_CODES:
        raise ValueError("grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    return INTERPOLATION_CODES[mode]


def padding_code(padding_mode):
    if padding_mode not in PADDING_CODES:
        raise ValueError("grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', "
                         f"but got: '{padding_mode}'")
    return PADDING_CODES[padding_mode]


def output_shape(input_shape, grid_shape):
    """(N, C, Do, Ho, Wo). Other mismatches (N, the grid's last dim, dtypes) are the C
    library's to refuse, with its status and message."""
    if len(input_shape) != 5 or len(grid_shape) != 5:
        raise ValueError("gridsampler3d samples volumes: expected a 5-D input (N, C, D, H, W) and a 5-D grid "
                         f"(N, D_out, H_out, W_out, 3), got {len(input_shape)}-D and {len(grid_shape)}-D "
                         "(for 4-D, use torch.nn.functional.grid_sample)")
    return (input_shape[0], input_shape[1], grid_shape[1], grid_shape[2], grid_shape[3])


def is_channels_last(shape, strides):
    """True when a 5-D (N, C, D, H, W) view is dense in (N, D, H, W, C) order and not also
    dense in NCDHW order (C = 1 is both): outputs then follow the input's layout."""
    def dense(order):
        expected = 1
        for axis in reversed(order):
            if shape[axis] != 1 and strides[axis] != expected:
                return False
            expected *= shape[axis]
        return True
    return len(shape) == 5 and dense((0, 2, 3, 4, 1)) and not dense((0, 1, 2, 3, 4))


def contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def affine_output_shape(input_shape, theta_shape, size):
    """(N, C, Do, Ho, Wo) of an affine warp: size's D, H, W (input's when size is None)."""
    if len(input_shape) != 5:
        raise ValueError(f"affine_warp: expected a 5-D input (N, C, D, H, W), got {len(input_shape)}-D")
    if len(theta_shape) != 3 or tuple(theta_shape[1:]) != (3, 4) or theta_shape[0] != input_shape[0]:
        raise ValueError(f"affine_warp: expected theta of shape ({input_shape[0]}, 3, 4), got {tuple(theta_shape)}")
    size = tuple(input_shape) if size is None else tuple(size)
    if len(size) != 5 or size[0] != input_shape[0]:
        raise ValueError(f"affine_warp: expected size (N, C, D_out, H_out, W_out) with N = {input_shape[0]}, got {size}")
    return (input_shape[0], input_shape[1]) + size[2:]


def displacement_output_shape(input_shape, flow_shape):
    """(N, C, Do, Ho, Wo) of a displacement warp: the flow's D, H, W."""
    if len(input_shape) != 5 or len(flow_shape) != 5:
        raise ValueError("displacement_warp: expected a 5-D input (N, C, D, H, W) and a 5-D flow (N, 3, D, H, W), "
                         f"got {len(input_shape)}-D and {len(flow_shape)}-D")
    return (input_shape[0], input_shape[1]) + tuple(flow_shape[2:])
