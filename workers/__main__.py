"""``python -m workers``: join this machine to the Ray cluster, or check the settings.

    python -m workers node --address HEAD:6379 [--num-cpus N]   # a worker node (blocks)
    python -m workers check                                     # settings + cluster reachable

``node`` runs ``ray start --address ... --block`` with this environment's Python,
so the node's workers can import memstrata and workers (install the ``ray``
extra of the same version on every node). ``check`` reads ``MEMSTRATA_WORKERS_*``,
connects as the service would, and lists the nodes.
"""

from __future__ import annotations

import argparse
import os
import shutil
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
    from workers.cluster import RayUnreachable, connect
    from workers.settings import WorkersSettings

    try:
        given = getattr(args, "address", None)
        # Loaded once; a malformed --address is refused like a malformed variable.
        config = load_config(namespaces={"workers": {"ray_address": given}})
        settings = config.get(WorkersSettings)
        if args.command == "node":
            address = settings.ray_address
            if not address or address.startswith("ray://") or address == "auto":
                print("--address: give the head's GCS address HOST:PORT (a node joins through "
                      "the GCS, not the Ray client port)", file=sys.stderr)
                return 2
            ray_bin = shutil.which("ray", path=os.path.dirname(sys.executable)) or "ray"
            cmd = [ray_bin, "start", f"--address={address}", "--block"]
            if args.num_cpus is not None:
                cmd.append(f"--num-cpus={args.num_cpus}")
            os.execv(ray_bin, cmd)
        ray = connect(settings)
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        print(f"backend={settings.backend} address={settings.ray_address or '(local)'}: "
              f"{len(nodes)} node(s), {ray.cluster_resources().get('CPU', 0):g} CPUs")
        ray.shutdown()
        return 0
    except (ConfigError, RayUnreachable) as exc:
        print(str(exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
