"""Runs the code input as the body of a function of (args, inputs, params, sdk) (see template.json)."""

import textwrap

import numpy as np
import pandas as pd


def main(args):
    code = args["script_inputs"].get("code")
    if not isinstance(code, str) or not code.strip():
        raise ValueError("Set the code input: the body of a function of (args, inputs, params, sdk).")
    source = "def custom(args, inputs, params, sdk):\n" + textwrap.indent(textwrap.dedent(code), "    ")
    scope = {"np": np, "pd": pd, "__builtins__": __builtins__}
    try:
        exec(compile(source, "code", "exec"), scope)
    except SyntaxError as error:
        raise ValueError("The code does not compile: %s (line %s)" % (error.msg, (error.lineno or 1) - 1)) from None
    return scope["custom"](args, args["inputs"], args["script_inputs"].get("params") or {}, sdk)
