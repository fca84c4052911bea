"""A mixture-of-experts layer in the shape transformers writes one (``integrations/moe.py``):
tokens sorted by expert, ``torch.histc`` to count tokens per expert, a grouped matmul behind a
custom op whose Python implementation reads the offsets on the host (``offsets.tolist()``; its
backward is a second custom op, so autograd does not trace into the loop), and the inverse
permutation built by index assignment (``aten.index_put``).

graphlint trace tests/tracer/targets/tiny_moe.py [--train]"""

import torch

HIDDEN, EXPERTS, TOP_K = 8, 4, 2


@torch.library.custom_op("graphlint_tests::grouped_matmul", mutates_args=())
def grouped_matmul(tokens: torch.Tensor, weights: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(tokens.size(0), weights.size(2), device=tokens.device, dtype=tokens.dtype)
    start = 0
    for expert, end in enumerate(offsets.tolist()):  # one host sync per call
        if end > start:
            out[start:end] = tokens[start:end] @ weights[expert]
        start = end
    return out


@grouped_matmul.register_fake
def _(tokens: torch.Tensor, weights: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    return tokens.new_empty(tokens.size(0), weights.size(2))


@torch.library.custom_op("graphlint_tests::grouped_matmul_backward", mutates_args=())
def grouped_matmul_backward(
    tokens: torch.Tensor, weights: torch.Tensor, offsets: torch.Tensor, grad: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    grad_tokens = torch.zeros_like(tokens)
    grad_weights = torch.zeros_like(weights)
    start = 0
    for expert, end in enumerate(offsets.tolist()):  # the same host sync, in the backward graph
        if end > start:
            grad_tokens[start:end] = grad[start:end] @ weights[expert].T
            grad_weights[expert] = tokens[start:end].T @ grad[start:end]
        start = end
    return grad_tokens, grad_weights


@grouped_matmul_backward.register_fake
def _(tokens: torch.Tensor, weights: torch.Tensor, offsets: torch.Tensor, grad: torch.Tensor):
    return torch.empty_like(tokens), torch.empty_like(weights)


def _grouped_matmul_backward(ctx, grad: torch.Tensor):
    tokens, weights = ctx.saved_tensors
    grad_tokens, grad_weights = grouped_matmul_backward(tokens, weights, ctx.offsets, grad)
    return grad_tokens, grad_weights, None


def _save(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[0], inputs[1])
    ctx.offsets = inputs[2]


grouped_matmul.register_autograd(_grouped_matmul_backward, setup_context=_save)


class TinyMoE(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.router = torch.nn.Linear(HIDDEN, EXPERTS, bias=False)
        self.experts = torch.nn.Parameter(torch.randn(EXPERTS, HIDDEN, HIDDEN) / HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = x.reshape(-1, HIDDEN)
        weights, chosen = self.router(tokens).softmax(-1).topk(TOP_K, dim=-1)
        flat = chosen.reshape(-1)
        perm = flat.argsort()
        counts = torch.histc(flat.float(), bins=EXPERTS, min=0, max=EXPERTS - 1)
        offsets = torch.cumsum(counts, dim=0, dtype=torch.int32)
        routed = tokens.repeat_interleave(TOP_K, dim=0)[perm]
        out = grouped_matmul(routed, self.experts, offsets)
        inverse = torch.empty_like(perm)
        inverse[perm] = torch.arange(perm.size(0), device=perm.device)
        out = out[inverse] * weights.reshape(-1, 1)
        return out.view(-1, TOP_K, HIDDEN).sum(1).view_as(x)


model = TinyMoE()
example_inputs = (torch.randn(2, 3, HIDDEN),)
