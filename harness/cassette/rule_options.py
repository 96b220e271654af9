"""Normalization rules on the command line (`harness proxy`, `harness serve`), read into one `Normalization`.

    --match-policy strict | volatile | sequence
    --mask metadata.user_id
    --substitute '$CWD=fact:cwd'  --substitute '$BUILD=pattern:build-\\d+'  --substitute '$ID=capture:id=(\\w+)'
    --preset claude-code   (also applied by itself when the client is the Claude Code CLI)
"""

from __future__ import annotations

import argparse

from harness.normalize import MATCH_POLICIES, PRESETS, STRING_RULES, Normalization, RuleError, Substitution, preset


def add_rule_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("matching rules (stored in the cassette when recording)")
    group.add_argument("--match-policy", choices=MATCH_POLICIES, default=None,
                       help="volatile (default: uuids, timestamps, dates, temp paths, nonces in tool output may "
                       "change, reported as drift); strict: only your own volatile rules; sequence: serve the "
                       "next recording when only tool_result content differs, and report the drift")
    group.add_argument("--mask", action="append", default=[], metavar="DOTTED.PATH",
                       help="a request field whose value is replaced by $MASKED before matching and storing")
    group.add_argument("--substitute", action="append", default=[], metavar="$NAME=KIND:VALUE",
                       help="a string rule: KIND fact (cwd, home, tmp), capture (a regex whose group 1 is the "
                       "value), pattern (a regex replaced by $NAME) or volatile (a regex whose matches in tool "
                       "output may change); repeatable")
    group.add_argument("--preset", action="append", default=[], choices=PRESETS,
                       help="a set of rules by name (claude-code is applied by itself to the Claude Code CLI)")


def parse_substitution(text: str) -> Substitution:
    placeholder, equals, rule = text.partition("=")
    kind, colon, value = rule.partition(":")
    if not equals or not colon or kind not in STRING_RULES:
        raise RuleError(f"--substitute {text!r}: write $NAME=fact:cwd, $NAME=capture:REGEX, $NAME=pattern:REGEX "
                        "or $NAME=volatile:REGEX")
    return Substitution(placeholder.strip(), **{kind: value})


def rules_from_arguments(args: argparse.Namespace) -> Normalization | None:
    rules = Normalization(mask=tuple(args.mask), policy=args.match_policy,
                          substitutions=tuple(parse_substitution(text) for text in args.substitute))
    for name in args.preset:
        rules = rules.merged(preset(name))
    return rules or None
