# expect-trace: verdict=torchair TA001@22
# expect-check: none
"""A scatter written with ``torch.index_put``: eager, dynamo and AOTAutograd are all fine, but
torchair's converter for ``aten.index_put`` raises NotImplementedError, so on an NPU the
GE-graph-mode job fails at translation (so does ``index_put_`` on a clone: functionalization makes
it ``index_put``). Fix: ``updated = hidden.scatter(0, slots[:, None].expand(-1, 8), values)``.

    graphlint trace samples/trace/converter_gap.py --torchair <torch_npu wheel>
"""

import torch


class ScoreUpdate(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, scores: torch.Tensor, slots: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        hidden = self.proj(scores)
        # write the new values into the chosen slots of each row
        updated = torch.index_put(hidden, (slots,), values)
        return updated.relu()


model = ScoreUpdate()
example_inputs = (torch.randn(4, 8), torch.tensor([0, 2]), torch.randn(2, 8))
