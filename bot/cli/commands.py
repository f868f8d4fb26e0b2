"""Every `gpuwhy` command: the module that registers it, and its one-line help.

Here as data so ``gpuwhy --help`` lists the commands without importing any of them, and a
command imports only its own module (with the store, the kubernetes client or Slack only
when it uses them). A new command gets its line here (a test checks every registered
command has one).
"""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    module: str  # has ``register(subparsers)``; each parser sets ``func(args) -> int``
    help: str


COMMANDS: dict[str, Command] = {
    "triage": Command("bot.cli.triage", "answer why a pod (or workload) is not running"),
    "devices": Command("bot.cli.triage",
                       "list the GPUs behind the answer for a pod (or workload)"),
    "capacity": Command("bot.cli.capacity",
                        "the cluster's GPUs by pool and product: held, free, broken"),
    "where": Command("bot.cli.capacity",
                     "could a pod asking N GPUs run now, where, and if not what it waits for"),
    "demo": Command("bot.cli.triage", "answer for every pod of the bundled demo cluster"),
    "digest": Command("bot.cli.store",
                      "the weekly digest: causes this week vs the week before"),
    "stats": Command("bot.cli.store", "answers per cause for each recent week"),
    "db": Command("bot.cli.store", "incident store maintenance"),
    "serve": Command("bot.cli.serve", "run the Slack bot"),
    "snapshot": Command("bot.cli.cluster",
                        "write a support bundle: the cluster as a dump directory"),
    "check": Command("bot.cli.cluster",
                     "would this manifest's pod schedule, and if not why (server dry-run)"),
    "doctor": Command("bot.cli.doctor", "check the config, Slack, cluster access and the store"),
}


def command_help(name: str) -> str:
    return COMMANDS[name].help
