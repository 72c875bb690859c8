"""grid_sample for torch tensors: the C library's forward, and its backward as the gradient
of a torch.autograd.Function. Tensors are passed as they are (any strides, no copy)."""
import torch
import torch.nn.functional as F

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


# PyTorch's own function, taken when this module is first imported: _patch imports it before
# it replaces the attribute, so this is never the replacement (which would recurse).
TORCH_GRID_SAMPLE = F.grid_sample
_MODES = {code: name for name, code in _arguments.INTERPOLATION_CODES.items()}
_PADDINGS = {code: name for name, code in _arguments.PADDING_CODES.items()}


def refuse_tricubic_create_graph(interpolation):
    if _MODES[interpolation] == "bicubic":
        raise RuntimeError("gridsampler3d: a backward with create_graph=True runs PyTorch's own composition, and "
                           "PyTorch has no 3-D bicubic (tricubic) to differentiate; gridsampler3d has no double "
                           "backward yet either")


def differentiable_backward(grad_output, input, grid, interpolation, padding, align_corners, output_mask):
    """The gradients as PyTorch's graph computes them, themselves differentiable: for a backward
    run with create_graph=True. The library's backward is a leaf of autograd; recomputing
    PyTorch's forward here gives higher-order autograd exactly PyTorch's behaviour (in 1.13 it
    raises that grid_sampler_3d_backward has no derivative)."""
    if input.dtype not in (torch.float32, torch.float64):
        raise RuntimeError(f"gridsampler3d: a backward with create_graph=True runs PyTorch's grid_sample, which "
                           f"has no {input.dtype} CPU kernel; use float32 or float64")
    refuse_tricubic_create_graph(interpolation)
    wanted = [t for t, needed in zip((input, grid), output_mask) if needed]
    with torch.enable_grad():
        output = TORCH_GRID_SAMPLE(input, grid, mode=_MODES[interpolation], padding_mode=_PADDINGS[padding],
                                   align_corners=align_corners)
        grads = iter(torch.autograd.grad(output, wanted, grad_output, create_graph=True))
    return tuple(next(grads) if needed else None for needed in output_mask)


class GridSampler3DFunction(torch.autograd.Function):
    """Forward: aclnnGridSampler3D. Backward: aclnnGridSampler3DBackward with the output mask
    set to the gradients autograd asks for; under create_graph=True, PyTorch's graph instead."""

    @staticmethod
    def forward(ctx, input, grid, interpolation, padding, align_corners):
        ctx.save_for_backward(input, grid)
        ctx.options = (interpolation, padding, align_corners)
        return forward(input, grid, interpolation, padding, align_corners)

    @staticmethod
    def backward(ctx, grad_output):
        input, grid = ctx.saved_tensors
        mask = (ctx.needs_input_grad[0], ctx.needs_input_grad[1])
        if torch.is_grad_enabled():  # create_graph=True: the gradients must carry a graph
            input_grad, grid_grad = differentiable_backward(grad_output, input, grid, *ctx.options, mask)
        else:
            input_grad, grid_grad = backward(grad_output.detach(), input.detach(), grid.detach(), *ctx.options, mask)
        return input_grad, grid_grad, None, None, None
