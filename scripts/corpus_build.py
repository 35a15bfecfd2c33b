"""Re-extract the development corpus of recorded LLM traffic from mirror git dirs.

    python3 scripts/corpus_build.py OUT_DIR GIT_DIR [GIT_DIR ...] [--rev REV ...]

Each ``GIT_DIR`` is a bare clone (or a ``.git`` folder) of a public repository;
its name is read from the path (``.../owner+name/repo`` as the mirror tool
writes it, or ``--name owner/name`` for a single one). From the ``HEAD`` tree
(or each ``--rev``, in the order given; a path taken from an earlier one is not
taken again), every file under a recordings folder (``cassettes/``,
``vcr_cassettes/``, R vcr's ``_vcr/``, Polly.js's ``recordings/`` and
``__recordings__/``, go-vcr's ``testdata/``) that is a YAML, JSON or HAR file
(or one gzipped), and every Go httprr trace (``*.httprr``, wherever it lies),
that names a model provider's host is written to ``OUT_DIR/<owner>__<name>/<path>``, with the
repository's licence file beside it (``OUT_DIR/<owner>__<name>/LICENSE*``).
Repositories kept to measure the result (issue 31) are refused, and the
pydantic-ai cassettes that ``../shared/real`` already carries are left out.
A ``MANIFEST.json`` per repository records the commit and the files taken.

Nothing here reaches the network; the mirrors are read with ``git``.
Files are written atomically (a temporary file, then a rename).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

#: kept to measure the result (issue 31): never part of the development corpus
HELD_BACK = frozenset(
    name.lower() for name in (
        "deepseek-harness", "magentic", "chatlas", "logfire", "agentops", "lmnr-python", "langsmith-sdk",
        "crewai", "dd-trace-py", "ruby_llm", "openinference", "lemmy", "fantasy",
        # already in ../shared/real
        "mirascope", "openllmetry", "llm", "llm-anthropic", "llm-gemini",
    )
)

#: a recordings folder somewhere in the path
FOLDER = re.compile(r"(^|/)(cassettes|vcr_cassettes|_vcr|recordings|__recordings__|testdata)(/|$)", re.IGNORECASE)
SUFFIXES = tuple(s + z for s in (".yaml", ".yml", ".json", ".har") for z in ("", ".gz"))
#: a request to a model provider appears in the recording
HOSTS = re.compile(rb"api\.openai\.com|api\.anthropic\.com|generativelanguage\.googleapis\.com|"
                   rb"api\.deepseek\.com|api\.groq\.com|openrouter\.ai|api\.mistral\.ai|"
                   rb"bedrock-runtime\.[a-z0-9-]+\.amazonaws\.com|aiplatform\.googleapis\.com|"
                   rb"api\.x\.ai|api\.together\.xyz|api\.fireworks\.ai|router\.huggingface\.co|"
                   rb"hyper\.charm\.land|api\.z\.ai|open\.bigmodel\.cn")
LICENCES = re.compile(r"^(LICEN[CS]E|COPYING)(\.[a-z0-9]+)?$", re.IGNORECASE)


def _git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True).stdout


def _blob(git_dir: Path, sha: str) -> bytes | None:
    """A blob's bytes, ``None`` where the snapshot lists it but lacks it (its largest files)."""
    try:
        return _git(git_dir, "cat-file", "blob", sha)
    except subprocess.CalledProcessError:
        return None


def repo_name(git_dir: Path) -> str:
    """``owner/name`` from a mirror path (``.../owner+name/repo``) or a folder named ``owner__name``."""
    for part in reversed(git_dir.resolve().parts):
        if "+" in part:
            owner, _, name = part.partition("+")
            return f"{owner}/{name}"
        if "__" in part:
            owner, _, name = part.partition("__")
            return f"{owner}/{name}"
    raise SystemExit(f"corpus_build: {git_dir}: cannot tell owner/name from the path (use --name)")


def _already_shared(shared: Path | None, repo: str) -> set[str]:
    """Paths the shared real-traffic folder already carries for ``repo``."""
    if shared is None or not repo.lower().endswith("/pydantic-ai"):
        return set()
    root = shared / "recorded-usage" / "pydantic-ai"
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} if root.is_dir() else set()


def _plain(path: str, data: bytes) -> bytes:
    """The recording's text (a ``.gz`` one gunzipped; one that does not gunzip as it stands)."""
    if not path.lower().endswith(".gz"):
        return data
    import gzip
    import zlib

    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error):
        return data


def wanted(path: str) -> bool:
    return path.lower().endswith(".httprr") or (bool(FOLDER.search(path)) and path.lower().endswith(SUFFIXES))


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, target)


def extract(git_dir: Path, out: Path, *, name: str | None = None, shared: Path | None = None,
            revs: tuple[str, ...] = ("HEAD",)) -> dict[str, object]:
    """Take one repository's recordings from the trees of ``revs`` (a path
    an earlier revision gave is not taken again) and write its ``MANIFEST.json``."""
    repo = name or repo_name(git_dir)
    if repo.rsplit("/", 1)[-1].lower() in HELD_BACK:
        raise SystemExit(f"corpus_build: {repo}: kept to measure the result (issue 31); not extracted")
    commits = [_git(git_dir, "rev-parse", f"{rev}^{{commit}}").decode().strip() for rev in revs]
    skip = _already_shared(shared, repo)
    dest = out / repo.replace("/", "__")
    taken: dict[str, str] = {}
    licences: list[str] = []
    absent: list[str] = []
    for commit in commits:
        for entry in _git(git_dir, "ls-tree", "-r", "-z", commit).split(b"\0"):
            if not entry:
                continue
            meta, _, raw_path = entry.partition(b"\t")
            mode, kind, sha = meta.split()
            path = raw_path.decode("utf-8", "surrogateescape")
            if kind != b"blob" or mode == b"120000" or path in taken:
                continue
            if "/" not in path and LICENCES.match(path):
                if path not in licences and (text := _blob(git_dir, sha.decode())) is not None:
                    _write(dest / path, text)
                    licences.append(path)
                continue
            if not wanted(path) or path in skip:
                continue
            data = _blob(git_dir, sha.decode())
            if data is None:
                absent.append(path)
                continue
            if not HOSTS.search(_plain(path, data)):
                continue
            _write(dest / path, data)
            taken[path] = commit
    manifest: dict[str, object] = {"repository": repo, "commit": commits[0], "licence_files": sorted(licences),
                                   "files": sorted(taken), "absent_from_snapshot": sorted(set(absent))}
    if len(commits) > 1:
        manifest["files_from"] = {c: sorted(p for p, at in taken.items() if at == c) for c in commits}
    _write(dest / "MANIFEST.json", (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("git_dirs", type=Path, nargs="+")
    ap.add_argument("--name", help="owner/name (only with one GIT_DIR)")
    ap.add_argument("--rev", action="append", default=None,
                    help="a revision whose tree to read (repeatable; default HEAD; the first one wins a path)")
    ap.add_argument("--shared", type=Path, default=Path("../shared/real"),
                    help="the shared real-traffic folder, whose files are not taken again")
    args = ap.parse_args(argv)
    if args.name and len(args.git_dirs) != 1:
        ap.error("--name takes one GIT_DIR")
    for g in args.git_dirs:
        if not g.is_dir():
            print(f"corpus_build: {g}: not a folder", file=sys.stderr)
            return 2
        m = extract(g, args.out, name=args.name, shared=args.shared if args.shared.is_dir() else None,
                    revs=tuple(args.rev or ("HEAD",)))
        print(f"{m['repository']}\t{m['commit']}\t{len(m['files'])} files\tlicence: {', '.join(m['licence_files']) or 'none'}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
