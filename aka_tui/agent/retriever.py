"""Knowledge retrieval for the loop, shared by `aka optimize` and the TUI."""

from __future__ import annotations

from typing import Any, Callable

Retriever = Callable[[str], tuple[list[str], str]]


def make_retriever(problem: Any, profile: Any, on_message: Callable[[str], object]) -> Retriever | None:
    """A function text → (entry ids, rendered context), or None (with a message) when the index is unusable.

    Retrieval is an aid: without chromadb or the embedding model the loop runs on and says so.
    """
    try:
        from aka_tui.knowledge.index import KbIndex
        from aka_tui.knowledge.retrieval import KbQuery, render_context, retrieve
        from aka_tui.knowledge.store import default_kb_dir, load_kb

        kb = load_kb(default_kb_dir())
        index = KbIndex(kb.root, on_message=on_message)
        index.sync(kb)
    except Exception as exc:
        on_message(f"knowledge retrieval unavailable ({type(exc).__name__}: {exc}); continuing without it")
        return None

    def ask(text: str) -> tuple[list[str], str]:
        query = KbQuery(text=text, hardware=profile.name, vendor=profile.vendor, arch=profile.arch,
                        family=problem.family, op=problem.name)
        result = retrieve(kb, index, query)
        return result.ids, render_context(result)

    return ask
