# The exception message carries HTML (a tokenizer error echoing its input): report.html shows it
# as text, never as markup (nor does the terminal report read it as rich markup), and the JSON
# keeps it verbatim.
# expect-trace: verdict=model GT001@14
# expect-check: none
import torch
from torch import nn

PAYLOAD = "<script>alert('graphlint')</script><img src=x onerror=alert(1)> [/bold] [link=file:///etc]"


class EchoesInput(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError(f"cannot tokenize {PAYLOAD} & more")


def graphlint_target():
    return EchoesInput(), (torch.ones(4),)
