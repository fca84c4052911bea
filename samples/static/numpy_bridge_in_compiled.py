"""torchair#451: yolov5 under torch.compile fails with "Guard check failed".

from_numpy makes a CPU tensor at trace time and an NPU one at replay; the guard on dispatch
keys fails. Convert before the compiled function, not inside it.
"""
# expect-check: GL104@24 GL104@30

import numpy as np
import torch
from torch import nn


def letterbox(img):
    h, w = img.shape[:2]
    return np.pad(img, ((0, 640 - h), (0, 640 - w), (0, 0)))


class Detect(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)

    def preprocess(self, frame):
        tensor = torch.from_numpy(frame).permute(2, 0, 1)
        return tensor.float().div(255).unsqueeze(0)

    def forward(self, frame):
        x = self.preprocess(frame)
        boxes = self.conv(x)
        return np.asarray(boxes.detach())


def load_frame(path):
    frame = letterbox(np.load(path))  # eager: fine
    return torch.from_numpy(frame)


detector = torch.compile(Detect())
