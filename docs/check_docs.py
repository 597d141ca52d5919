"""Run every example in the docs and compare its output with the page.

Usage (from the repository root)::

    python docs/check_docs.py            # check all pages, report differences
    python docs/check_docs.py --update   # rewrite the output blocks in place
    python docs/check_docs.py docs/tutorial/03-power-states.md

Conventions in the Markdown pages:

* A fenced ``python`` block is executed; all Python blocks of one page share a
  namespace, like cells of a notebook. A fenced ``text`` block right after it
  is its expected standard output.
* A fenced ``console`` block holds shell commands (lines starting with
  ``$ ``), each followed by its expected output (stdout and stderr).
* ``<!-- file: NAME -->`` on the line before a fenced block writes the block
  to ``NAME`` instead of running it (scenario files, policy modules).
* ``<!-- skip -->`` on the line before a fenced block leaves it alone.

Each page runs in a fresh temporary folder holding links to the
repository's ``scenarios/`` and ``tests/``, so commands read as if run from the
repository root and nothing is written into the checkout. Lines with a wall
time are not compared.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import re
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```(\w*)\s*$")
VOLATILE = re.compile(r"wall time|wall_s")


def blocks(lines: list[str]):
    """Yield (kind, start, end, marker) for each fenced block; end is the closing line."""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m and m.group(1):
            j = i + 1
            while j < len(lines) and lines[j].rstrip() != "```":
                j += 1
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            marker = lines[k].strip() if k >= 0 and lines[k].strip().startswith("<!--") else ""
            yield m.group(1), i, j, marker
            i = j + 1
        else:
            i += 1


def run_python(code: str, namespace: dict, cwd: Path) -> str:
    """Execute ``code`` in ``namespace`` from ``cwd``; return what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), _chdir(cwd):
        try:
            exec(compile(code, "<docs>", "exec"), namespace)
        except Exception:  # noqa: BLE001 - shown in the diff
            traceback.print_exc(file=out)
    return out.getvalue()


def run_console(text: str, cwd: Path) -> list[str]:
    """Return the console block re-created from real command outputs."""
    lines = []
    for line in text.splitlines():
        if line.startswith("$ "):
            cmd = line[2:]
            proc = subprocess.run(
                cmd, shell=True, cwd=cwd, capture_output=True, text=True, executable="/bin/bash"
            )
            lines.append(line)
            lines.extend((proc.stdout + proc.stderr).splitlines())
    return lines


@contextlib.contextmanager
def _chdir(path: Path):
    import os

    old = os.getcwd()
    os.chdir(path)
    sys.path.insert(0, str(path))
    try:
        yield
    finally:
        sys.path.remove(str(path))
        os.chdir(old)
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", "") or "").startswith(str(path)):
                del sys.modules[name]


def comparable(lines: list[str]) -> list[str]:
    """Lines as compared: trailing spaces and wall-time lines removed."""
    return [ln.rstrip() for ln in lines if not VOLATILE.search(ln)]


def check_page(page: Path, update: bool) -> bool:
    """Run the examples of one page; report (or, with ``update``, fix) differences."""
    lines = page.read_text().splitlines()
    found = list(blocks(lines))
    ok = True
    replacements: list[tuple[int, int, list[str]]] = []
    with tempfile.TemporaryDirectory(prefix="hpcpower-docs-") as tmp:
        cwd = Path(tmp)
        (cwd / "scenarios").symlink_to(ROOT / "scenarios")
        (cwd / "tests").symlink_to(ROOT / "tests")
        namespace: dict = {"__name__": "__docs__"}
        for n, (kind, start, end, marker) in enumerate(found):
            body = "\n".join(lines[start + 1 : end]) + "\n"
            if marker.startswith("<!-- skip"):
                continue
            fm = re.match(r"<!--\s*file:\s*(\S+)\s*-->", marker)
            if fm:
                target = cwd / fm.group(1)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(body)
                continue
            if kind == "python":
                got = run_python(body, namespace, cwd).splitlines()
                nxt = found[n + 1] if n + 1 < len(found) else None
                between = lines[end + 1 : nxt[1]] if nxt else []
                if nxt and nxt[0] == "text" and not any(s.strip() for s in between):
                    want = lines[nxt[1] + 1 : nxt[2]]
                    span = (nxt[1] + 1, nxt[2])
                else:
                    want, span = [], None
                    if got:
                        print(f"{page}:{start + 1}: python block printed but has no text block")
                        print("\n".join(got[:20]))
                        ok = False
                        continue
            elif kind == "console":
                got = run_console(body, cwd)
                want = lines[start + 1 : end]
                span = (start + 1, end)
            else:
                continue
            if comparable(got) != comparable(want):
                ok = False
                if update and span:
                    replacements.append((span[0], span[1], got))
                else:
                    print(f"{page}:{start + 1}: output differs")
                    sys.stdout.writelines(
                        d + "\n"
                        for d in difflib.unified_diff(want, got, "page", "actual", lineterm="", n=1)
                    )
    if update and replacements:
        for s, e, new in sorted(replacements, reverse=True):
            lines[s:e] = new
        page.write_text("\n".join(lines) + "\n")
        print(f"{page}: updated {len(replacements)} block(s)")
    return ok


def main(argv: list[str]) -> int:
    """Check the pages named in ``argv`` (default: all); 1 if any is out of date."""
    update = "--update" in argv
    pages = [Path(a) for a in argv if not a.startswith("--")]
    if not pages:
        pages = sorted((ROOT / "docs").rglob("*.md"))
    bad = [p for p in pages if not check_page(p, update)]
    if bad and not update:
        print(f"{len(bad)} page(s) out of date: " + ", ".join(str(p) for p in bad))
        return 1
    print(f"checked {len(pages)} page(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
