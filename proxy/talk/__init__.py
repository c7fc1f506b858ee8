"""``duplex-proxy talk URL``: talk to a realtime endpoint from the command line."""

from proxy.talk.cli import add_talk_command, configure_parser, run_talk

__all__ = ["add_talk_command", "configure_parser", "run_talk"]
