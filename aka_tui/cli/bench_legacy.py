"""`aka bench`'s flag forms from before it had subcommands, rewritten onto them (reports, docs and scripts
record these commands, so they keep working):

    aka bench --candidates DIR | --baseline KIND ...   ->  aka bench run ...
    aka bench --rescore REPORT... ...                  ->  aka bench rescore REPORT... ...
    aka bench --library-compare [DIR] ...              ->  aka bench libraries [DIR] ...
    aka bench --candidates DIR --report illusion ...   ->  aka bench illusion DIR ...

`--report scores` (the old default) is dropped. Only the words that choose the mode move; every other flag is
checked by the subcommand's parser, so a flag that subcommand does not take is one clear error line."""

from __future__ import annotations

BENCH_SUBCOMMANDS = ("run", "rescore", "libraries", "illusion")
HELP_FLAGS = ("-h", "--help")
# The old one-of group: at most one of these chose what `aka bench` did.
EXCLUSIVE = ("--baseline", "--candidates", "--rescore", "--library-compare")
MODE_FLAGS = {"--rescore": "rescore", "--library-compare": "libraries"}


class LegacyFormError(ValueError):
    """An old flag form that cannot be mapped onto a subcommand (the message is the one line to show)."""


def rewrite_bench_argv(argv: list[str]) -> list[str]:
    """argv with an old `aka bench` flag form rewritten to its subcommand; anything else is returned unchanged."""
    at = _command_index(argv)
    if at is None or argv[at] != "bench":
        return argv
    rest = argv[at + 1:]
    if not rest or not rest[0].startswith("-") or all(token in HELP_FLAGS for token in rest):
        return argv  # a subcommand (or a typo argparse names), `aka bench`, `aka bench --help`
    return argv[:at + 1] + _subcommand_form(rest)


def _command_index(argv: list[str]) -> int | None:
    """Where the command word is: past `aka`'s own options (only --suite takes a value)."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if len(token) > 2 and "--suite".startswith(token):
            i += 2
        elif token.startswith("-"):
            i += 1
        else:
            return i
    return None


def _subcommand_form(rest: list[str]) -> list[str]:
    """The words after `bench` in an old flag form, as `SUBCOMMAND ...`."""
    chosen: list[str] = []  # the EXCLUSIVE flags given, in order
    illusion = False
    kept: list[str] = []
    i = 0
    while i < len(rest):
        flag, has_value, value = rest[i].partition("=")
        i += 1
        if flag == "--report":
            if not has_value:
                if i >= len(rest):
                    raise LegacyFormError("argument --report: expected one argument")
                value, i = rest[i], i + 1
            if value not in ("scores", "illusion"):
                raise LegacyFormError(f"argument --report: invalid choice: {value!r} (choose from scores, illusion)")
            illusion = illusion or value == "illusion"
            continue
        if flag in EXCLUSIVE:
            chosen.append(flag)
        if flag in MODE_FLAGS:
            kept += [value] if has_value else []  # the flag's value, if any, is the subcommand's argument
            continue
        kept.append(rest[i - 1])
    distinct = list(dict.fromkeys(chosen))
    if len(distinct) > 1:
        raise LegacyFormError(f"argument {distinct[1]}: not allowed with argument {distinct[0]}")
    if illusion:
        if distinct != ["--candidates"]:
            raise LegacyFormError("--report illusion needs --candidates DIR (aka bench illusion DIR)")
        return ["illusion", *_candidates_as_argument(kept)]
    return [MODE_FLAGS.get(distinct[0], "run") if distinct else "run", *kept]


def _candidates_as_argument(words: list[str]) -> list[str]:
    """`--candidates DIR` / `--candidates=DIR` as the bare DIR that `aka bench illusion` takes."""
    out: list[str] = []
    for word in words:
        if word == "--candidates":
            continue  # its value, the next word, stays
        out.append(word[len("--candidates="):] if word.startswith("--candidates=") else word)
    return out
