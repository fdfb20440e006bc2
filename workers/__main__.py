"""``python -m workers``: join this machine to the Ray cluster, or check the settings.

    python -m workers node --address HEAD:6379 [--num-cpus N]   # a worker node (blocks)
    python -m workers check                                     # settings + cluster reachable

The same as ``memstrata workers node|check`` (see :mod:`workers.node`), for an
image whose entry point is this package.
"""

from __future__ import annotations

import argparse
import sys

from memstrata.config import ConfigError, load_config


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m workers", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    node = sub.add_parser("node", help="run a Ray worker node that joins HEAD (blocks)")
    node.add_argument("--address", default=None,
                      help="the head's GCS address HOST:PORT (default: "
                           "MEMSTRATA_WORKERS_RAY_ADDRESS)")
    node.add_argument("--num-cpus", type=int, default=None)
    sub.add_parser("check", help="validate MEMSTRATA_WORKERS_* and reach the cluster")
    args = p.parse_args(argv)
    from workers.cluster import RayUnreachable
    from workers.node import check, node_command, node_env, run
    from workers.settings import WorkersSettings

    try:
        given = getattr(args, "address", None)
        # Loaded once; a malformed --address is refused like a malformed variable.
        config = load_config(namespaces={"workers": {"ray_address": given}})
        settings = config.get(WorkersSettings)
        if args.command == "node":
            run(node_command(settings.ray_address, num_cpus=args.num_cpus), node_env(settings))
        print(check(settings))
        return 0
    except (ConfigError, RayUnreachable) as exc:
        print(str(exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
