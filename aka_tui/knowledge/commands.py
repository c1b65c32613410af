"""`aka kb …` commands: search, show, add, edit, rm, reindex, validate, pending, accept, reject, eval."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from aka_tui.errors import KbEntryError
from aka_tui.knowledge.entry import LAYERS, parse_entry, read_text_file, render_entry
from aka_tui.knowledge.store import (
    KnowledgeBase,
    accept_pending,
    default_kb_dir,
    home_folder,
    load_kb,
    reject_pending,
    remove_entry,
    write_entry,
)
from aka_tui.paths import aka_home


def _kb(args: argparse.Namespace, quiet: bool = False) -> KnowledgeBase:
    kb = load_kb(Path(args.kb) if args.kb else default_kb_dir())
    if kb.errors and not quiet:
        print(f"warning: {len(kb.errors)} malformed entr{'y' if len(kb.errors) == 1 else 'ies'} skipped "
              "(see `aka kb validate`)", file=sys.stderr)
    return kb


def _index(kb: KnowledgeBase) -> Any:
    from aka_tui.knowledge.index import KbIndex

    index = KbIndex(kb.root, on_message=lambda m: print(m, file=sys.stderr))
    report = index.sync(kb)
    if report.added or report.updated or report.removed or report.rebuilt:
        print(f"index: {report}", file=sys.stderr)
    return index


def _query(args: argparse.Namespace, text: str) -> Any:
    from aka_tui.knowledge.retrieval import KbQuery

    layers = tuple(args.layer) if args.layer else LAYERS
    return KbQuery(text=text, hardware=args.hardware, vendor=args.vendor, arch=args.arch, dsl=args.dsl,
                   family=args.family, op=args.op, layers=layers)


def cmd_search(args: argparse.Namespace) -> int:
    from aka_tui.knowledge.retrieval import rank_layer, retrieve

    kb = _kb(args)
    index = _index(kb)
    query = _query(args, " ".join(args.query))
    if args.flat:
        rows = [r for layer in query.layers for r in rank_layer(kb, index, query, layer)]
        rows.sort(key=lambda r: -r.score)
        for r in rows[: args.k]:
            print(f"{r.score:5.3f}  {r.entry.layer:12s} {r.entry.id:45s} {r.entry.title}")
        return 0
    result = retrieve(kb, index, query)
    for r in result.entries:
        print(f"{r.score:5.3f}  {r.entry.layer:12s} {r.entry.id:45s} {r.entry.title}")
    print(f"{len(result.entries)} entries, {result.used_chars} characters"
          + (f"; over budget: {', '.join(result.over_budget)}" if result.over_budget else ""))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    entry = _kb(args, quiet=True).get(args.id)
    print(render_entry(entry))
    if entry.kernel_path and args.kernel:
        print(read_text_file(entry.kernel_path))
    print(f"# file: {entry.path}")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    kb = _kb(args, quiet=True)
    source = Path(args.file)
    if not source.is_file():
        raise KbEntryError(f"{source} does not exist")
    entry = parse_entry(source.with_name(source.stem + ".md") if source.suffix != ".md" else source,
                        text=read_text_file(source))
    if entry.kind == "reference-kernel":
        raise KbEntryError("add reference kernels by placing the .md and .py under kb/family/<family>/")
    path = write_entry(kb, entry, pending=args.pending)
    print(f"added {entry.id} → {path}" + (" (pending review)" if args.pending else ""))
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    kb = _kb(args, quiet=True)
    entry = kb.get(args.id)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    drafts = aka_home() / "kb-drafts"
    drafts.mkdir(parents=True, exist_ok=True)
    draft = drafts / f"{entry.id}-{int(time.time())}.md"
    draft.write_text(entry.path.read_text())
    if subprocess.call([*shlex.split(editor), str(draft)]) != 0:
        raise KbEntryError(f"the editor exited with an error; your draft is kept at {draft}")
    try:
        edited = parse_entry(entry.path, text=draft.read_text(), layer_from_path=None)
    except KbEntryError as exc:
        raise KbEntryError(f"{exc}; nothing was changed, your draft is kept at {draft}") from None
    if edited.id != entry.id:
        raise KbEntryError(f"the id cannot change in an edit ({entry.id} → {edited.id}); draft kept at {draft}")
    target = entry.path if entry.id in kb.pending or home_folder(kb.root, edited) == entry.path.parent \
        else home_folder(kb.root, edited) / entry.path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(draft.read_text())
    if target != entry.path:
        entry.path.unlink()
    draft.unlink()
    print(f"saved {target}")
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    path = remove_entry(_kb(args, quiet=True), args.id)
    print(f"removed {path} (git keeps the history)")
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    from aka_tui.knowledge.index import KbIndex

    kb = _kb(args)
    index = KbIndex(kb.root, on_message=lambda m: print(m, file=sys.stderr))
    if args.rebuild:
        index.reset()
    started = time.perf_counter()
    report = index.sync(kb)
    print(f"index {index.index_dir}: {report} ({time.perf_counter() - started:.1f} s)")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    kb = _kb(args, quiet=True)
    for entry in kb.entries.values():  # a reference kernel's file must be readable text too
        if entry.kernel_path is not None and entry.kernel_path.is_file():
            try:
                read_text_file(entry.kernel_path)
            except KbEntryError as exc:
                kb.errors.append(exc)
    for error in kb.errors:
        print(f"{error.title}: {error}")
    counts = {layer: len(kb.by_layer(layer)) for layer in LAYERS}
    print(f"{len(kb.entries)} entries valid ({', '.join(f'{k} {v}' for k, v in counts.items())}), "
          f"{len(kb.pending)} pending, {len(kb.errors)} malformed")
    return 1 if kb.errors else 0


def cmd_pending(args: argparse.Namespace) -> int:
    kb = _kb(args, quiet=True)
    for entry in sorted(kb.pending.values(), key=lambda e: e.id):
        print(f"{entry.id:45s} {entry.layer:12s} {entry.title}")
    print(f"{len(kb.pending)} pending")
    return 0


def cmd_accept(args: argparse.Namespace) -> int:
    print(f"accepted → {accept_pending(_kb(args, quiet=True), args.id)}")
    return 0


def cmd_reject(args: argparse.Namespace) -> int:
    print(f"rejected → {reject_pending(_kb(args, quiet=True), args.id)} (kept for the record)")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from aka_tui.knowledge.evaluation import evaluate_retrieval, leak_check

    kb = _kb(args)
    index = _index(kb)
    queries_path = Path(args.queries) if args.queries else kb.root / "retrieval-eval.json"
    report = evaluate_retrieval(kb, index, json.loads(queries_path.read_text()), k=args.k)
    for line in report.lines:
        print(line)
    leaks = leak_check(kb, index)
    print(f"leak check over {leaks.queries} scoped queries: {len(leaks.leaks)} leaks"
          + "".join(f"\n  {leak}" for leak in leaks.leaks[:20]))
    print(f"recall@{args.k} = {report.recall:.3f} over {report.count} queries")
    return 0 if not leaks.leaks else 1


def cmd_bench(args: argparse.Namespace) -> int:
    """Full index build time and per-query retrieval latency after warm-up."""
    import statistics
    import tempfile

    from aka_tui.knowledge import embedding
    from aka_tui.knowledge.evaluation import query_from
    from aka_tui.knowledge.index import KbIndex
    from aka_tui.knowledge.retrieval import retrieve

    kb = _kb(args)
    started = time.perf_counter()
    embedding.embed(["warm up"])
    model_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory(prefix="aka-kb-bench-") as tmp:
        index = KbIndex(kb.root, index_dir=Path(tmp) / "index")
        started = time.perf_counter()
        report = index.sync(kb)
        build_s = time.perf_counter() - started
        queries = json.loads((kb.root / "retrieval-eval.json").read_text())
        retrieve(kb, index, query_from(queries[0]))  # warm-up
        latencies = []
        for _ in range(args.rounds):
            for spec in queries:
                embedding.embed_query.cache_clear()  # every query pays its embedding
                t0 = time.perf_counter()
                retrieve(kb, index, query_from(spec))
                latencies.append((time.perf_counter() - t0) * 1e3)
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    print(f"model load {model_s:.1f} s; full index build of {report.added} entries {build_s:.1f} s "
          f"(embedding + insert, model already loaded)")
    print(f"retrieval latency over {len(latencies)} queries (layered, 5 layers, embedding included): "
          f"median {statistics.median(latencies):.1f} ms, p95 {p95:.1f} ms, max {latencies[-1]:.1f} ms")
    return 0


def register(sub: Any) -> Any:
    """Add `aka kb` and its actions to the CLI parser; returns the actions (other packages add theirs)."""
    p = sub.add_parser("kb", help="knowledge base: search, show, add, edit, rm, reindex, validate, curate",
                       description="The layered knowledge base (plain files under kb/; the Chroma index is derived).")
    p.add_argument("--kb", help="knowledge-base directory (default: the shipped kb/)")
    actions = p.add_subparsers(dest="kb_command", metavar="ACTION", required=True)

    def scoped(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--hardware", help="hardware profile (exact hardware-fact lookup), e.g. h200")
        parser.add_argument("--vendor", help="nvidia | amd")
        parser.add_argument("--arch", help="hopper | ampere | cdna3 | cpu")
        parser.add_argument("--dsl", default="triton", help="default triton")
        parser.add_argument("--family", help="operator family, e.g. norm")
        parser.add_argument("--op", help="problem name, e.g. rms_norm")
        parser.add_argument("--layer", action="append", choices=LAYERS, help="restrict to a layer (repeatable)")

    s = actions.add_parser("search", help="retrieve entries for a question",
                           description="Scope filters first (vendor/arch/dsl/family/op), then semantic ranking "
                                       "boosted by measured worth, assembled layer by layer.")
    s.add_argument("query", nargs="+")
    s.add_argument("--flat", action="store_true", help="one ranked list instead of the layered assembly")
    s.add_argument("-k", type=int, default=10, help="rows with --flat")
    scoped(s)
    s.set_defaults(func=cmd_search)
    s = actions.add_parser("show", help="print an entry", description="Print an entry (and its kernel with --kernel).")
    s.add_argument("id")
    s.add_argument("--kernel", action="store_true", help="also print the reference kernel source")
    s.set_defaults(func=cmd_show)
    s = actions.add_parser("add", help="add an entry from a drafted .md file",
                           description="Validate a drafted entry file and place it in its layer folder "
                                       "(or in pending/ with --pending).")
    s.add_argument("file")
    s.add_argument("--pending", action="store_true", help="propose it for review instead of accepting it")
    s.set_defaults(func=cmd_add)
    s = actions.add_parser("edit", help="edit an entry in $EDITOR (validated before it is saved)",
                           description="Open the entry in $VISUAL/$EDITOR; an invalid edit changes nothing and "
                                       "keeps your draft.")
    s.add_argument("id")
    s.set_defaults(func=cmd_edit)
    s = actions.add_parser("rm", help="delete an entry", description="Delete an entry's file.")
    s.add_argument("id")
    s.set_defaults(func=cmd_rm)
    s = actions.add_parser("reindex", help="bring the index up to date (or --rebuild it)",
                           description="Embed new or changed entries and drop removed ones (by content hash).")
    s.add_argument("--rebuild", action="store_true", help="drop the index and embed everything again")
    s.set_defaults(func=cmd_reindex)
    s = actions.add_parser("validate", help="report every malformed entry with file and field",
                           description="Check every entry; the valid ones load regardless.")
    s.set_defaults(func=cmd_validate)
    s = actions.add_parser("pending", help="list proposed entries awaiting review",
                           description="List entries in kb/pending/.")
    s.set_defaults(func=cmd_pending)
    s = actions.add_parser("accept", help="accept a proposed entry", description="Move a pending entry into its layer.")
    s.add_argument("id")
    s.set_defaults(func=cmd_accept)
    s = actions.add_parser("reject", help="reject a proposed entry", description="Move a pending entry to pending/rejected/.")
    s.add_argument("id")
    s.set_defaults(func=cmd_reject)
    s = actions.add_parser("eval", help="retrieval benchmark: recall@k on the query set and the leak check",
                           description="Run the retrieval test set (kb/retrieval-eval.json) and a leak check over "
                                       "every scoped entry.")
    s.add_argument("--queries", help="query set JSON (default kb/retrieval-eval.json)")
    s.add_argument("-k", type=int, default=3)
    s.set_defaults(func=cmd_eval)
    s = actions.add_parser("bench", help="time a full index build and per-query retrieval latency",
                           description="Build the index from scratch in a temporary directory and time retrieval "
                                       "of the query set after a warm-up (query embedding included).")
    s.add_argument("--rounds", type=int, default=3)
    s.set_defaults(func=cmd_bench)
    return actions
