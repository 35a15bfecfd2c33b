"""Console view of a :class:`fidelity.calibrate.Calibration` (its JSON view
is :meth:`~fidelity.calibrate.Calibration.to_json`): a table per session,
then the summary figures."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from .. import formats
from ..calibrate import Calibration, SessionResult

__all__ = ["render"]


def _session_table(session: SessionResult) -> Table:
    table = Table(title=f"{session.name}  ({session.skipped} request(s) without a DeepSeek cache report skipped)"
                  if session.skipped else session.name, title_justify="left")
    for column in ("turn/step", "prompt real", "pred", "err", "cached real", "pred", "err", "output real", "pred"):
        table.add_column(column, justify="right")
    for s in session.steps:
        err = Text(f"{s.cached_error:+d}", style="red" if s.cached_error > 0 else ("yellow" if s.cached_error else "green"))
        table.add_row(f"{s.turn}/{s.step}", str(s.real_prompt), str(s.predicted_prompt),
                      "anchor" if s.anchor else f"{s.prompt_error:+d}",
                      str(s.real_cached), str(s.predicted_cached), err,
                      "" if s.real_output is None else str(s.real_output), str(s.predicted_output))
    return table


def render(result: Calibration) -> Group:
    """Rich view: a table per session with calibrated steps, then the summary."""
    parts: list[RenderableType] = [_session_table(s) for s in result.sessions if s.steps]
    sm = result.summary
    lines = [
        f"tokenizer {result.tokenizer}, cache model {result.cache_model} (unit {sm.unit} tokens)",
        f"requests with a DeepSeek cache report: {sm.steps} "
        f"({sm.steps - sm.prompt_steps} header anchors)",
        f"prompt tokens, |predicted - real| over {sm.prompt_steps} non-anchor requests: "
        f"median {sm.prompt_error_median:g}, p95 {sm.prompt_error_p95:g}",
    ]
    if sm.absolute_error_median is not None:
        lines.append(f"prompt tokens with today's sidecar header, no anchor ({sm.absolute_steps} requests): "
                     f"median |error| {sm.absolute_error_median:g}")
    lines += [
        f"cached tokens: exact {formats.percent(sm.cached_exact)} "
        f"(non-anchor requests {formats.percent(sm.cached_exact_continuing)}), "
        f"within one unit {formats.percent(sm.cached_within_unit)}; "
        f"over-predicted {sm.over_predicted}, under-predicted {sm.under_predicted}",
    ]
    if sm.output_error_median is not None:
        lines.append(f"output tokens: median |error| {sm.output_error_median:g}")
    parts.append(Text("\n".join(lines)))
    return Group(*parts)
