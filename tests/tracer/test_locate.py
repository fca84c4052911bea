"""The user's line: own files first, then code outside libraries, then a model library
(transformers), never torch, the standard library or graphlint."""

from __future__ import annotations

import os
import traceback

import torch
import transformers

from graphlint.tracer.locate import pick_user_frame, user_line_of_stack_trace

TORCH_FILE = os.path.join(os.path.dirname(torch.__file__), "nn", "modules", "module.py")
TRANSFORMERS_FILE = os.path.join(os.path.dirname(transformers.__file__), "models", "gpt2", "modeling_gpt2.py")
STDLIB_FILE = traceback.__file__


def test_own_file_wins_over_everything() -> None:
    frames = [(__file__, 3), (TRANSFORMERS_FILE, 40), (TORCH_FILE, 9)]
    assert pick_user_frame(frames, {__file__}) == (__file__, 3)


def test_model_library_frame_when_no_user_frame_exists() -> None:
    frames = [(TORCH_FILE, 1), (TRANSFORMERS_FILE, 40), (TORCH_FILE, 9), (STDLIB_FILE, 2)]
    assert pick_user_frame(frames, {"/elsewhere/model.py"}) == (TRANSFORMERS_FILE, 40)


def test_only_torch_stdlib_and_frozen_frames_give_no_line() -> None:
    assert pick_user_frame([(TORCH_FILE, 1), (STDLIB_FILE, 2), ("<frozen importlib._bootstrap>", 3)]) is None


def test_fx_stack_trace_text() -> None:
    stack_trace = f'  File "{TORCH_FILE}", line 10, in _call_impl\n  File "{__file__}", line 7, in forward\n    y = x + 1\n'
    assert user_line_of_stack_trace(stack_trace, {__file__}) == (__file__, 7)
