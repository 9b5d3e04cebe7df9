"""How every indexing tool is metered: one decorator counts calls, enforces the soft budget, bounds sizes."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec

from pydantic_ai import RunContext

from cairn.tools.deps import ToolDeps
from cairn.tools.results import Notice, R, fit

P = ParamSpec("P")


def budget_notice(deps: ToolDeps) -> Notice:
    return Notice(
        notice=(
            f"Tool budget used up ({deps.max_tool_calls} calls). Do not call any more tools: "
            "return your final result now with what you already know."
        )
    )


def metered(
    func: Callable[Concatenate[RunContext[ToolDeps], P], Awaitable[R]],
) -> Callable[Concatenate[RunContext[ToolDeps], P], Awaitable[R | Notice]]:
    """Wrap a tool so it counts against `ctx.deps.max_tool_calls` and its result fits `max_result_chars`.

    Past the budget the tool does not run and answers with a notice instead of raising: a usage-limit
    exception would throw away the whole run, while the notice lets the model finish with what it has.
    The wrapper keeps the tool's name, signature and docstring, which pydantic-ai turns into the schema.
    String arguments are made encodable first (see `encodable`).
    """

    @functools.wraps(func)
    async def run(ctx: RunContext[ToolDeps], /, *args: P.args, **kwargs: P.kwargs) -> R | Notice:
        deps = ctx.deps
        deps.tool_calls += 1
        if deps.tool_calls > deps.max_tool_calls:
            return budget_notice(deps)
        clean_args = [encodable(value) for value in args]
        clean_kwargs = {key: encodable(value) for key, value in kwargs.items()}
        return fit(await func(ctx, *clean_args, **clean_kwargs), deps.max_result_chars)  # type: ignore[arg-type]

    return run


def encodable(value: object) -> object:
    """A string argument with lone surrogates replaced; anything else as it is.

    A model's JSON can carry `\\ud800`-style escapes that decode to lone surrogates, which SQLite
    refuses to bind (UnicodeEncodeError): the tool would end the run instead of matching nothing.
    """
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    return value
