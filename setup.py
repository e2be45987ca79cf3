"""The one build step pyproject.toml cannot declare: the codec's protobuf module.

``pulsar_codec/pulsar_api_pb2.py`` is generated from ``pulsar_codec/pulsar_api.proto`` and never
committed, so a wheel built from a clean clone must generate it itself: ``build_py`` runs protoc
(grpcio-tools, a build requirement) after copying the sources. The generated module refuses a
protobuf runtime older than the protoc that wrote it, which is why pyproject.toml's protobuf
requirement and its grpcio-tools build requirement move together.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PROTO = Path("pulsar_codec") / "pulsar_api.proto"


class build_py_with_proto(build_py):
    def run(self):
        super().run()
        # An editable install reads the source tree, so the module goes next to the .proto there.
        out = PROTO.parent if self.editable_mode else Path(self.build_lib) / PROTO.parent
        generate(PROTO, out)


def generate(proto: Path, out: Path) -> None:
    from grpc_tools import protoc  # a build requirement, so imported only when building

    out.mkdir(parents=True, exist_ok=True)
    argv = ["grpc_tools.protoc", f"-I{proto.parent}", f"--python_out={out}", str(proto)]
    if protoc.main(argv) != 0:
        raise SystemExit(f"protoc could not compile {proto} (argv {argv})")


setup(cmdclass={"build_py": build_py_with_proto})
