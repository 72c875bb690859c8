"""affine_warp and displacement_warp for torch tensors: the C library's fused warps, forward
and backward, as one torch.autograd.Function."""
import torch
import torch.nn.functional as F

from . import _arguments, _runtime
from ._torch import TORCH_GRID_SAMPLE, _MODES, _PADDINGS, _empty_like_layout, _view, refuse_tricubic_create_graph


def composition(kind, input, parameters, out_shape, interpolation, padding, align_corners):
    """The warp as PyTorch composes it: F.affine_grid then F.grid_sample, or VoxelMorph's
    SpatialTransformer (its grid in the flow's dtype)."""
    if kind == "affine":
        grid = F.affine_grid(parameters, list(out_shape), align_corners=align_corners)
    else:
        shape = parameters.shape[2:]
        axes = [torch.arange(0, s, dtype=parameters.dtype) for s in shape]
        locations = torch.stack(torch.meshgrid(*axes, indexing="ij")).unsqueeze(0) + parameters
        locations = torch.stack([2 * (locations[:, i] / (shape[i] - 1) - 0.5) for i in range(3)], dim=1)
        grid = locations.permute(0, 2, 3, 4, 1)[..., [2, 1, 0]]
        align_corners = True
    return TORCH_GRID_SAMPLE(input, grid, mode=_MODES[interpolation], padding_mode=_PADDINGS[padding],
                             align_corners=align_corners)


def forward(kind, input, parameters, out_shape, interpolation, padding, align_corners):
    output = _empty_like_layout(out_shape, input)
    _runtime.warp_forward(kind, _view(input, "input"), _view(parameters, "theta" if kind == "affine" else "flow"),
                          _view(output, "output"), interpolation, padding, align_corners)
    return output


def backward(kind, grad_output, input, parameters, interpolation, padding, align_corners, output_mask):
    name = "theta" if kind == "affine" else "flow"
    views = [_view(grad_output, "grad_output"), _view(input, "input"), _view(parameters, name)]
    input_grad = _empty_like_layout(input.shape, input) if output_mask[0] else None
    if not output_mask[1]:
        parameters_grad = None
    elif kind == "affine":
        parameters_grad = torch.empty(parameters.shape, dtype=parameters.dtype)
    else:
        parameters_grad = _empty_like_layout(parameters.shape, parameters)
    without_data = lambda t: _runtime.view_without_data(t.shape, str(t.dtype).replace("torch.", ""))
    _runtime.warp_backward(kind, *views,
                           _view(input_grad, "input_grad") if output_mask[0] else without_data(input),
                           _view(parameters_grad, name + "_grad") if output_mask[1] else without_data(parameters),
                           interpolation, padding, align_corners, tuple(bool(m) for m in output_mask))
    return input_grad, parameters_grad


class WarpFunction(torch.autograd.Function):
    """Forward: gs3dAffineWarp3D or gs3dDisplacementWarp3D. Backward: their backward with the
    output mask set to the gradients autograd asks for; under create_graph=True, PyTorch's
    composition instead, so that higher orders are PyTorch's."""

    @staticmethod
    def forward(ctx, input, parameters, kind, out_shape, interpolation, padding, align_corners):
        ctx.save_for_backward(input, parameters)
        ctx.options = (kind, out_shape, interpolation, padding, align_corners)
        return forward(kind, input, parameters, out_shape, interpolation, padding, align_corners)

    @staticmethod
    def backward(ctx, grad_output):
        input, parameters = ctx.saved_tensors
        kind, out_shape, interpolation, padding, align_corners = ctx.options
        mask = (ctx.needs_input_grad[0], ctx.needs_input_grad[1])
        if torch.is_grad_enabled():  # create_graph=True: the gradients must carry a graph
            if input.dtype not in (torch.float32, torch.float64):
                raise RuntimeError("gridsampler3d: a backward with create_graph=True runs PyTorch's composition, "
                                   f"which has no {input.dtype} CPU kernel; use float32 or float64")
            refuse_tricubic_create_graph(interpolation)
            wanted = [t for t, needed in zip((input, parameters), mask) if needed]
            with torch.enable_grad():
                output = composition(kind, input, parameters, out_shape, interpolation, padding, align_corners)
                grads = iter(torch.autograd.grad(output, wanted, grad_output, create_graph=True))
            input_grad, parameters_grad = (next(grads) if needed else None for needed in mask)
        else:
            input_grad, parameters_grad = backward(kind, grad_output.detach(), input.detach(), parameters.detach(),
                                                   interpolation, padding, align_corners, mask)
        return input_grad, parameters_grad, None, None, None, None, None


def affine_warp(input, theta, size, mode, padding_mode, align_corners):
    interpolation, padding = _arguments.interpolation_code(mode), _arguments.padding_code(padding_mode)
    out_shape = _arguments.affine_output_shape(tuple(input.shape), tuple(theta.shape), size)
    return WarpFunction.apply(input, theta, "affine", out_shape, interpolation, padding, bool(align_corners))


def displacement_warp(input, flow, mode, padding_mode):
    interpolation, padding = _arguments.interpolation_code(mode), _arguments.padding_code(padding_mode)
    out_shape = _arguments.displacement_output_shape(tuple(input.shape), tuple(flow.shape))
    return WarpFunction.apply(input, flow, "displacement", out_shape, interpolation, padding, True)
