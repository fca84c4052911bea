"""torchair#236: qwen2.5-vl capture fails with "Not allow to sync captured-stream".

Under reduce-overhead (aclgraph) the rotary embedding builds positions on the host and moves
them with .to(device): a host→device memcpy inside capture. Build them on the NPU instead.
"""
# expect-check: GL201@27 GL203@27 GL201@28 GL201@39 GL201@41
# expect-region: GL201@27 capture host_device_copy_in_capture.py:45 VisionBlock.forward>VisionRotaryEmbedding.forward
# expect-region: GL203@27 capture host_device_copy_in_capture.py:45 VisionBlock.forward>VisionRotaryEmbedding.forward
# expect-region: GL201@28 capture host_device_copy_in_capture.py:45 VisionBlock.forward>VisionRotaryEmbedding.forward
# expect-region: GL201@39 capture host_device_copy_in_capture.py:45 VisionBlock.forward
# expect-region: GL201@41 capture host_device_copy_in_capture.py:45 VisionBlock.forward

import torch
import torchair
from torch import nn

config = torchair.CompilerConfig()
config.mode = "reduce-overhead"


class VisionRotaryEmbedding(nn.Module):
    def __init__(self, dim: int, theta: float = 10000.0):
        super().__init__()
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))

    def forward(self, seqlen: int, device):
        seq = torch.arange(seqlen, dtype=self.inv_freq.dtype).to(device)
        return torch.outer(seq, self.inv_freq.to(device))


class VisionBlock(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.rotary = VisionRotaryEmbedding(dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        freqs = self.rotary(x.shape[0], x.device)
        window = torch.tensor([0, 4, 8, 16], device=x.device)
        x = x + freqs.sum(-1, keepdim=True)
        return self.proj(x)[window.cpu()]


npu_backend = torchair.get_npu_backend(compiler_config=config)
model = torch.compile(VisionBlock(16), backend=npu_backend)
