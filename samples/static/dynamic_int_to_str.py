"""torchair#602: npugraph_ex core control calls str() on a dynamic int argument.

`aic_num` / `aiv_num` are inputs of the compiled function, so dynamo makes them SymInts;
str() of a SymInt cannot be traced. Fix: pass core numbers as module attributes/constants.
"""
# expect-check: GL102@22 GL102@26 GL102@26 GL102@27
# expect-region: GL102@22 compiled dynamic_int_to_str.py:35 cached_model>describe
# expect-region: GL102@26 compiled dynamic_int_to_str.py:35 cached_model
# expect-region: GL102@26 compiled dynamic_int_to_str.py:35 cached_model
# expect-region: GL102@27 compiled dynamic_int_to_str.py:35 cached_model

import torch


def limit_cores(aic: str, aiv: str):
    # stands for torch_npu's npugraph_ex scope.limit_core_num(aic, aiv)
    return {"aicore_num": aic, "vectorcore_num": aiv}


def describe(x: torch.Tensor, blocks: int):
    rows = x.size(0)
    return "rows=%d blocks=%d" % (rows, blocks)


def cached_model(x: torch.Tensor, aic_num: int, aiv_num: int):
    options = limit_cores(str(aic_num), str(aiv_num))
    tag = f"tokens={x.shape[0]}"
    return x * len(options), tag, describe(x, aic_num)


def label(x: torch.Tensor):
    return f"{x.shape[0]} tokens"  # eager only: never compiled


compiled = torch.compile(cached_model, dynamic=True)
