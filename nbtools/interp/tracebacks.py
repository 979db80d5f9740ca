"""An exception from submitted code as a short traceback for the model.

Only the submitted code's frames are shown, plus the innermost frame when it is elsewhere; frames
of library code in between are counted, and frames of this package (the runner, the signal handler
that raised the time-out, the stream routers) are never shown.
"""

from __future__ import annotations

import os
import traceback

# Frames whose file lies in this package are the interpreter's machinery, not the code's.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

_MOST_FRAMES = 20  # a longer traceback (deep recursion) keeps its first and last frames only


def format_error(exc: BaseException, filename: str, timed_out: bool, timeout: float | None) -> str:
    """A short traceback: the submitted code's frames, plus the frame that raised if elsewhere.

    `filename` is the name the code was compiled under; `timed_out` replaces the exception's own
    last line by the time-out message for `timeout` seconds."""
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        return "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n")
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next  # drop the runner's frames above the submitted code
    stack = [frame for frame in traceback.extract_tb(tb) if not frame.filename.startswith(_PACKAGE_DIR)]
    if timed_out:  # where the submitted code was when it was stopped; library internals are noise
        stack = [frame for frame in stack if frame.filename == filename] or stack[-1:]
    lines = _short_stack(stack, filename)
    if lines:
        lines.insert(0, "Traceback (most recent call last):\n")
    if timed_out:
        lines.append(f"TimeoutError: the code did not finish within {timeout:g} s and was stopped\n")
    else:
        cause = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        if cause is not None:  # one line instead of a second traceback
            cause_text = "".join(traceback.format_exception_only(type(cause), cause)).strip()
            lines.append(f"  [raised while handling {cause_text.splitlines()[-1]}]\n")
        lines.extend(traceback.format_exception_only(type(exc), exc))
    return "".join(lines).rstrip("\n")


def _short_stack(stack: list[traceback.FrameSummary], filename: str) -> list[str]:
    """Formatted frames of the submitted code and the innermost frame; library frames in between
    are counted, not shown. Runs of one repeated line (recursion) are folded into one line, as
    Python does, and a stack still too deep keeps only its ends: a model reads all of it."""
    lines: list[str] = []
    kept: list[traceback.FrameSummary] = []
    skipped = 0

    def flush() -> None:
        # One StackSummary per run of kept frames, so repeats fold ("Previous line repeated").
        if kept:
            lines.extend(traceback.StackSummary.from_list(kept).format())
            kept.clear()

    for index, frame in enumerate(stack):
        if frame.filename == filename or index == len(stack) - 1:
            if skipped:
                flush()
                plural = "s" if skipped > 1 else ""
                lines.append(f"  [... {skipped} frame{plural} in library code ...]\n")
                skipped = 0
            kept.append(frame)
        else:
            skipped += 1
    flush()
    if len(lines) > _MOST_FRAMES:
        half = _MOST_FRAMES // 2
        lines[half:-half] = [f"  [... {len(lines) - 2 * half} more frames ...]\n"]
    return lines
