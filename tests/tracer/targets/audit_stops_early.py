"""A target whose forward raises only on the capture audit's stand-in device (not on the CPU):
the audit stops before it has seen the graph, so capture is ``inconclusive``, not passed."""

import torch


class HostOnly(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)
        if x.device.type != "cpu":
            raise RuntimeError("this model only runs on the host")
        return y + 1


model = HostOnly()
example_inputs = (torch.randn(4, 8),)
