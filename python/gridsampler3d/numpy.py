"""grid_sample, the fused warps and their backward for NumPy arrays (float16, float32, float64).

Arrays with non-negative strides that are whole elements are passed without a copy; others
(negative strides, unaligned or byte-swapped data) are copied first. Outputs follow the
input's layout: channels-last (N, D, H, W, C in memory) input gives channels-last outputs.
"""
import numpy as np

from . import _arguments, _runtime

__all__ = ["grid_sample", "grid_sample_backward", "affine_warp", "affine_warp_backward", "displacement_warp",
           "displacement_warp_backward"]


def _array(value):
    array = np.asarray(value)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    if (not array.flags.aligned or array.itemsize == 0
            or any(s < 0 or s % array.itemsize for s in array.strides)):
        # A copy, not np.ascontiguousarray: NumPy calls a view contiguous whatever the strides
        # of its size-1 axes (and of an empty view), and would return it as it is.
        array = array.copy(order="C")
    return array


def _view(array):
    return _runtime.View(array.ctypes.data, array.shape, tuple(s // array.itemsize for s in array.strides),
                         array.dtype.name)


def _empty_like_layout(shape, like):
    if _arguments.is_channels_last(like.shape, tuple(s // like.itemsize for s in like.strides)):
        n, c, d, h, w = shape
        return np.empty((n, d, h, w, c), dtype=like.dtype).transpose(0, 4, 1, 2, 3)
    return np.empty(shape, dtype=like.dtype)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """The values of torch.nn.functional.grid_sample for a 5-D input (N, C, D, H, W) and grid
    (N, D_out, H_out, W_out, 3); returns (N, C, D_out, H_out, W_out)."""
    interpolation, padding = _arguments.interpolation_code(mode), _arguments.padding_code(padding_mode)
    input, grid = _array(input), _array(grid)
    output = _empty_like_layout(_arguments.output_shape(input.shape, grid.shape), input)
    _runtime.forward(_view(input), _view(grid), _view(output), interpolation, padding, bool(align_corners))
    return output


def grid_sample_backward(grad_output, input, grid, mode="bilinear", padding_mode="zeros", align_corners=False,
                         output_mask=(True, True)):
    """(input_grad, grid_grad): the gradients of sum(grid_sample(input, grid) * grad_output)
    with respect to input and grid. A gradient that output_mask leaves out is not computed
    and is returned as None."""
    interpolation, padding = _arguments.interpolation_code(mode), _arguments.padding_code(padding_mode)
    grad_output, input, grid = _array(grad_output), _array(input), _array(grid)
    _arguments.output_shape(input.shape, grid.shape)  # the rank check
    want_input, want_grid = (bool(m) for m in output_mask)
    input_grad = _empty_like_layout(input.shape, input) if want_input else None
    grid_grad = np.empty(grid.shape, dtype=grid.dtype) if want_grid else None
    _runtime.backward(_view(grad_output), _view(input), _view(grid),
                      _view(input_grad) if want_input else _runtime.view_without_data(input.shape, input.dtype.name),
                      _view(grid_grad) if want_grid else _runtime.view_without_data(grid.shape, grid.dtype.name),
                      interpolation, padding, bool(align_corners), (want_input, want_grid))
    return input_grad, grid_grad


def _warp(kind, input, parameters, out_shape, mode, padding_mode, align_corners):
    interpolation, padding = _arguments.interpolation_code(mode), _arguments.padding_code(padding_mode)
    output = _empty_like_layout(out_shape, input)
    _runtime.warp_forward(kind, _view(input), _view(parameters), _view(output), interpolation, padding,
                          bool(align_corners))
    return output


def _warp_backward(kind, grad_output, input, parameters, mode, padding_mode, align_corners, output_mask):
    interpolation, padding = _arguments.interpolation_code(mode), _arguments.padding_code(padding_mode)
    want_input, want_parameters = (bool(m) for m in output_mask)
    input_grad = _empty_like_layout(input.shape, input) if want_input else None
    parameters_grad = np.empty(parameters.shape, dtype=parameters.dtype) if want_parameters else None
    _runtime.warp_backward(
        kind, _view(grad_output), _view(input), _view(parameters),
        _view(input_grad) if want_input else _runtime.view_without_data(input.shape, input.dtype.name),
        _view(parameters_grad) if want_parameters else _runtime.view_without_data(parameters.shape,
                                                                                    parameters.dtype.name),
        interpolation, padding, bool(align_corners), (want_input, want_parameters))
    return input_grad, parameters_grad


def affine_warp(input, theta, size=None, mode="bilinear", padding_mode="zeros", align_corners=False):
    """The values of gridsampler3d.affine_warp: grid_sample at F.affine_grid(theta, size)'s
    coordinates, never building them; theta (N, 3, 4), size (N, C, D_out, H_out, W_out) (the
    input's shape when None)."""
    input, theta = _array(input), _array(theta)
    out_shape = _arguments.affine_output_shape(input.shape, theta.shape, size)
    return _warp("affine", input, theta, out_shape, mode, padding_mode, align_corners)


def affine_warp_backward(grad_output, input, theta, mode="bilinear", padding_mode="zeros", align_corners=False,
                         output_mask=(True, True)):
    """(input_grad, theta_grad) of sum(affine_warp(input, theta) * grad_output); the output
    size is grad_output's. A gradient that output_mask leaves out is returned as None."""
    grad_output, input, theta = _array(grad_output), _array(input), _array(theta)
    _arguments.affine_output_shape(input.shape, theta.shape, grad_output.shape)  # the shape checks
    return _warp_backward("affine", grad_output, input, theta, mode, padding_mode, align_corners, output_mask)


def displacement_warp(input, flow, mode="bilinear", padding_mode="zeros"):
    """The values of gridsampler3d.displacement_warp (VoxelMorph's SpatialTransformer): flow
    (N, 3, D_out, H_out, W_out) in voxels along (D, H, W)."""
    input, flow = _array(input), _array(flow)
    out_shape = _arguments.displacement_output_shape(input.shape, flow.shape)
    return _warp("displacement", input, flow, out_shape, mode, padding_mode, True)


def displacement_warp_backward(grad_output, input, flow, mode="bilinear", padding_mode="zeros",
                               output_mask=(True, True)):
    """(input_grad, flow_grad) of sum(displacement_warp(input, flow) * grad_output)."""
    grad_output, input, flow = _array(grad_output), _array(input), _array(flow)
    _arguments.displacement_output_shape(input.shape, flow.shape)
    return _warp_backward("displacement", grad_output, input, flow, mode, padding_mode, True, output_mask)
