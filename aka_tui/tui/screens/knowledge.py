"""The Knowledge screen: layer tree, semantic search, view / add / edit / delete, curation of proposals."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.markdown import Markdown
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, LoadingIndicator, Static, Tree

from aka_tui.tui.screens.dialogs import Confirm
from aka_tui.tui.screens.kernel_files import edit_text

PENDING_NODE = "pending"
KB_POLL_S = 2.0  # how often the entry files are checked for changes made outside the app (aka kb add …)


def kb_signature(root: Path) -> tuple[tuple[str, int], ...]:
    """Entry files and their modification times: changes when an entry is added, edited, moved or removed."""
    seen = []
    for path in root.rglob("*"):
        if path.suffix in (".md", ".py") and path.is_file():
            try:
                seen.append((str(path.relative_to(root)), path.stat().st_mtime_ns))
            except OSError:
                continue
    return tuple(sorted(seen))


def tracked_by_git(path: Path) -> bool:
    """Whether git has the file in its index (so deleting it leaves it in the history)."""
    import subprocess

    from aka_tui.environment import environment_snapshot

    try:
        done = subprocess.run(["git", "-C", str(path.parent), "ls-files", "--error-unmatch", path.name],
                              capture_output=True, check=False, timeout=10, env=environment_snapshot())
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


class KnowledgeScreen(Screen[None]):
    """Curate the knowledge base; every write goes through the store's validation."""

    BINDINGS = [
        Binding("slash", "focus_search", "Search", id="kb.search"),
        Binding("a", "add", "Add", id="kb.add"),
        Binding("e", "edit", "Edit", id="kb.edit"),
        Binding("d", "delete", "Delete", id="kb.delete"),
        Binding("y", "accept", "Accept pending", id="kb.accept"),
        Binding("n", "reject", "Reject pending", id="kb.reject"),
        Binding("escape", "focus_tree", "Tree", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.kb: Any = None
        self.selected_id: str | None = None
        self.search_started = 0.0
        self._seen: tuple[tuple[str, int], ...] | None = None

    @property
    def _app(self) -> Any:
        return self.app

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="kb-status", classes="status")
        with Horizontal(id="kb-body"):
            yield Tree("knowledge base", id="kb-tree")
            with Vertical():
                yield Input(placeholder="semantic search (/), e.g. rms_norm far below copy bandwidth", id="kb-query")
                yield LoadingIndicator(id="kb-loading")
                results: DataTable[str] = DataTable(id="kb-search-results", cursor_type="row")
                yield results
                with VerticalScroll(id="kb-view"):
                    yield Static("select an entry in the tree", id="kb-entry")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#kb-loading").display = False
        results = self.query_one("#kb-search-results", DataTable)
        results.add_columns("score", "layer", "id", "title")
        results.display = False
        self.reload()
        self.set_interval(KB_POLL_S, self.reload_if_changed, name="kb-poll")

    def on_screen_resume(self) -> None:
        self.reload_if_changed()

    def reload_if_changed(self) -> None:
        """Reload when an entry file changed on disk (added with `aka kb add --pending`, edited elsewhere)."""
        if self.kb is None or not self.is_current:
            return
        if kb_signature(self.kb.root) != self._seen:
            self.reload(select=self.selected_id, quiet=True)
            self.notify("the knowledge base changed on disk: reloaded")

    def kb_root(self) -> Path:
        paths = self._app.paths
        if paths is not None and paths.kb_dir is not None:
            return Path(paths.kb_dir)
        from aka_tui.knowledge.store import default_kb_dir

        return default_kb_dir()

    def reload(self, select: str | None = None, quiet: bool = False) -> None:
        """Load the knowledge base from disk and rebuild the tree (malformed files are listed)."""
        from aka_tui.knowledge.entry import LAYERS
        from aka_tui.knowledge.store import load_kb

        root = self.kb_root()
        self._seen = kb_signature(root)
        self.kb = load_kb(root)
        tree: Tree[str] = self.query_one(Tree)
        tree.clear()
        tree.root.expand()
        for layer in LAYERS:
            entries = self.kb.by_layer(layer)
            node = tree.root.add(f"{layer} ({len(entries)})", data=None)
            for entry in entries:
                leaf = node.add_leaf(entry.id, data=entry.id)
                if entry.id == select:
                    node.expand()
                    self.call_after_refresh(tree.select_node, leaf)
        pending = tree.root.add(f"{PENDING_NODE} ({len(self.kb.pending)}) — proposed, to curate", data=None,
                                expand=True)
        for entry_id in sorted(self.kb.pending):
            pending.add_leaf(entry_id, data=entry_id)
        status = f"{len(self.kb.entries)} entries, {len(self.kb.pending)} pending in {self.kb.root}"
        if self.kb.errors:
            status += f"\n[yellow]{len(self.kb.errors)} malformed file(s) skipped: {self.kb.errors[0]}[/yellow]"
        self.query_one("#kb-status", Static).update(status)
        if select is not None and (select in self.kb.entries or select in self.kb.pending):
            self.show_entry(select)
        elif select is not None and not quiet:
            self.notify(f"{select} is no longer in the knowledge base", severity="warning")

    @on(Tree.NodeHighlighted, "#kb-tree")
    def _node_highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        if event.node.data:
            self.show_entry(event.node.data)

    @on(DataTable.RowHighlighted, "#kb-search-results")
    def _result_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value:
            self.show_entry(str(event.row_key.value))

    def show_entry(self, entry_id: str) -> None:
        try:
            entry = self.kb.get(entry_id)
        except Exception as exc:
            self._app.show_error(exc)
            return
        self.selected_id = entry_id
        scope = ", ".join(f"{k}={'/'.join(v)}" for k, v in entry.scope.items() if v) or "everywhere"
        worth = (f"measured {entry.worth.speedup:g}× on {entry.worth.measured_on}" if entry.worth.measured
                 else "documented")
        state = "PENDING — y accepts, n rejects, e edits" if entry_id in self.kb.pending else entry.status
        text = (f"# {entry.title}\n\n`{entry.id}` · layer **{entry.layer}** · {entry.kind} · {state}\n\n"
                f"scope: {scope} · signals: {', '.join(entry.signals) or '-'} · worth: {worth}\n\n"
                f"triggers: {'; '.join(entry.triggers) or '-'}\n\n---\n\n{entry.body}\n\n*file: {entry.path}*")
        self.query_one("#kb-entry", Static).update(Markdown(text))

    # ----- search ---------------------------------------------------------------------------------------
    def action_focus_search(self) -> None:
        self.query_one("#kb-query", Input).focus()

    def action_focus_tree(self) -> None:
        self.query_one(Tree).focus()

    @on(Input.Submitted, "#kb-query")
    def _search(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        self.query_one("#kb-loading").display = True
        self.search_started = time.monotonic()
        self.query_one("#kb-status", Static).update(
            "searching… (the first search loads the embedding model and syncs the index: ~5-10 s)")
        self.run_worker(lambda: self._run_search(text), thread=True, exclusive=True, group="kb-search",
                        exit_on_error=False, name="kb-search")

    def _run_search(self, text: str) -> None:
        from aka_tui.knowledge.index import KbIndex
        from aka_tui.knowledge.retrieval import KbQuery, rank_layer

        try:
            index = KbIndex(self.kb.root, on_message=lambda m: self.app.call_from_thread(self.notify, m))
            index.sync(self.kb)
            query = KbQuery(text=text, dsl=None)
            rows = [r for layer in query.layers for r in rank_layer(self.kb, index, query, layer)]
        except Exception as exc:
            self.app.call_from_thread(self._search_failed, exc)
            return
        rows.sort(key=lambda r: -r.score)
        self.app.call_from_thread(self._show_results, text, rows[:15])

    def _search_failed(self, exc: Exception) -> None:
        self.query_one("#kb-loading").display = False
        self._app.show_error(exc)
        self.query_one("#kb-status", Static).update("search failed; the tree still works")

    def _show_results(self, text: str, rows: list[Any]) -> None:
        self.query_one("#kb-loading").display = False
        table = self.query_one("#kb-search-results", DataTable)
        table.clear()
        table.display = True
        for r in rows:
            table.add_row(f"{r.score:.3f}", r.entry.layer, r.entry.id, r.entry.title, key=r.entry.id)
        self.query_one("#kb-status", Static).update(
            f"{len(rows)} results for “{text}” in {time.monotonic() - self.search_started:.1f} s")
        if rows:
            table.focus()

    # ----- curation -------------------------------------------------------------------------------------
    def action_add(self) -> None:
        from aka_tui.tui.kb_editing import NEW_ENTRY_TEMPLATE, validation_message

        edit_text(self.app, "New knowledge-base entry", NEW_ENTRY_TEMPLATE,
                  lambda text: validation_message(self.kb, text, None), self._added, suffix=".md")

    def _added(self, text: str | None) -> None:
        if text is None:
            return
        from aka_tui.tui.kb_editing import add_entry

        try:
            path = add_entry(self.kb, text)
        except Exception as exc:
            self._app.show_error(exc)
            return
        self.notify(f"added {path}")
        self.reload(select=path.stem)

    def _selected_entry(self) -> Any:
        if self.selected_id is None:
            self.notify("select an entry first", severity="warning")
            return None
        return self.kb.get(self.selected_id)

    def action_edit(self) -> None:
        from aka_tui.tui.kb_editing import validation_message

        entry = self._selected_entry()
        if entry is None:
            return
        edit_text(self.app, f"Edit {entry.id}", entry.path.read_text(),
                  lambda text: validation_message(self.kb, text, entry), lambda text: self._edited(entry, text),
                  suffix=".md")

    def _edited(self, entry: Any, text: str | None) -> None:
        if text is None:
            return
        from aka_tui.tui.kb_editing import save_edit

        try:
            path = save_edit(self.kb, entry, text)
        except Exception as exc:
            self._app.show_error(exc)
            return
        self.notify(f"saved {path}")
        self.reload(select=entry.id)

    def action_delete(self) -> None:
        entry = self._selected_entry()
        if entry is None:
            return
        if entry.id in self.kb.pending:
            self.notify("a pending entry is rejected (n), not deleted: rejected entries are kept", severity="warning")
            return
        history = ("git keeps its history" if tracked_by_git(entry.path)
                   else "it is not in git, so this cannot be undone")
        self.app.push_screen(Confirm(f"Delete {entry.id} ({entry.path.name})? {history}."),
                             lambda yes: self._delete(entry.id) if yes else None)

    def _delete(self, entry_id: str) -> None:
        from aka_tui.knowledge.store import remove_entry

        try:
            path = remove_entry(self.kb, entry_id)
        except Exception as exc:
            self._app.show_error(exc)
            return
        self.notify(f"deleted {path}")
        self.selected_id = None
        self.reload()

    def action_accept(self) -> None:
        self._curate("accept")

    def action_reject(self) -> None:
        self._curate("reject")

    def _curate(self, verb: str) -> None:
        from aka_tui.knowledge.store import accept_pending, reject_pending

        entry_id = self.selected_id
        if entry_id is None or entry_id not in self.kb.pending:
            self.notify("select a pending entry (under 'pending' in the tree)", severity="warning")
            return
        try:
            path = (accept_pending if verb == "accept" else reject_pending)(self.kb, entry_id)
        except Exception as exc:
            self._app.show_error(exc)
            return
        self.notify(f"{verb}ed {entry_id} → {path}")
        self.selected_id = None
        self.reload(select=entry_id if verb == "accept" else None)
