"""grid_sample for torch tensors: the C library's forward, and its backward as the gradient
of a torch.autograd.Function. Tensors are passed as they are (any strides, no copy)."""
import torch
from torch.autograd.function import once_differentiable

from . import _arguments, _runtime


def _view(tensor, name):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"gridsampler3d: {name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise ValueError(f"gridsampler3d: {name} is on {tensor.device}; gridsampler3d runs on the CPU")
    return _runtime.View(tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()),
                         str(tensor.dtype).replace("torch.", ""))


def _empty_like_layout(shape, like):
    channels_last = _arguments.is_channels_last(tuple(like.shape), tuple(like.stride()))
    memory_format = torch.channels_last_3d if channels_last else torch.contiguous_format
    return torch.empty(shape, dtype=like.dtype, memory_format=memory_format)


def forward(input, grid, interpolation, padding, align_corners):
    input_view, grid_view = _view(input, "input"), _view(grid, "grid")
    output = _empty_like_layout(_arguments.output_shape(input.shape, grid.shape), input)
    _runtime.forward(input_view, grid_view, _view(output, "output"), interpolation, padding, align_corners)
    return output


def backward(grad_output, input, grid, interpolation, padding, align_corners, output_mask):
    views = [_view(grad_output, "grad_output"), _view(input, "input"), _view(grid, "grid")]
    input_grad = _empty_like_layout(input.shape, input) if output_mask[0] else None
    grid_grad = torch.empty(grid.shape, dtype=grid.dtype) if output_mask[1] else None
    without_data = lambda t: _runtime.view_without_data(t.shape, str(t.dtype).replace("torch.", ""))
    input_grad_view = _view(input_grad, "input_grad") if output_mask[0] else without_data(input)
    grid_grad_view = _view(grid_grad, "grid_grad") if output_mask[1] else without_data(grid)
    _runtime.backward(*views, input_grad_view, grid_grad_view, interpolation, padding, align_corners,
                      tuple(bool(m) for m in output_mask))
    return input_grad, grid_grad


class GridSampler3DFunction(torch.autograd.Function):
    """Forward: aclnnGridSampler3D. Backward: aclnnGridSampler3DBackward with the output mask
    set to the gradients autograd asks for. Not twice differentiable."""

    @staticmethod
    def forward(ctx, input, grid, interpolation, padding, align_corners):
        ctx.save_for_backward(input, grid)
        ctx.options = (interpolation, padding, align_corners)
        return forward(input, grid, interpolation, padding, align_corners)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        input, grid = ctx.saved_tensors
        mask = (ctx.needs_input_grad[0], ctx.needs_input_grad[1])
        input_grad, grid_grad = backward(grad_output, input, grid, *ctx.options, mask)
        return input_grad, grid_grad, None, None, None
