"""harness_image/build.py: what goes into the harness image, as data; the base chosen as the
pulsar-container target chooses its image; the Dockerfile and the plan agreeing on names and paths.
The image built and run for real is test_image_run.py."""

import re
import zipfile
from pathlib import Path

import pytest

from conformance.errors import TargetError
from conformance.targets import image as images
from harness_image import build as hi


def test_platform_tags_reach_from_the_images_glibc_down_to_the_oldest_manylinux():
    tags = hi.platform_tags("x86_64", 41)
    assert tags[0] == "manylinux_2_41_x86_64" and "manylinux_2_17_x86_64" in tags
    assert {"manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "manylinux_2_5_x86_64"} <= set(tags)
    assert len(tags) == len(set(tags))
    arm = hi.platform_tags("aarch64", 41)
    assert "manylinux2014_aarch64" in arm and not any("manylinux1" in t or "2010" in t for t in arm)
    args = hi.pip_target_args("x86_64")
    assert args[:7] == ["--only-binary=:all:", "--python-version", hi.PYTHON_VERSION, "--implementation", "cp",
                        "--abi", "cp" + hi.PYTHON_VERSION.replace(".", "")]
    assert args.count("--platform") == len(hi.platform_tags("x86_64"))


def test_pins_are_the_plain_pins_of_pip_freeze_without_the_package_itself():
    freeze = "\n".join([
        "-e git+https://example.invalid/x.git@abc#egg=pulsar_conformance",
        "pulsar_conformance==0.1.0",
        "PyYAML==6.0.2",
        "pulsar-client==3.13.0",
        "zope.interface==7.0",
        "local-thing @ file:///tmp/local_thing-1.0-py3-none-any.whl",
        "",
    ])
    assert hi.pins(freeze) == ["pulsar-client==3.13.0", "pyyaml==6.0.2", "zope-interface==7.0"]
    assert hi.pinned_version(hi.pins(freeze), "PyYAML") == "6.0.2"
    assert hi.pinned_version(hi.pins(freeze), "pyspark") is None


def test_the_wheelhouse_key_follows_pins_and_requirements_only():
    key = hi.wheelhouse_key(["a==1"], ["b>=2"], "x86_64")
    assert key == hi.wheelhouse_key(["a==1"], ["b>=2"], "x86_64")
    assert key != hi.wheelhouse_key(["a==2"], ["b>=2"], "x86_64")
    assert key != hi.wheelhouse_key(["a==1"], ["b>=3"], "x86_64")
    assert key != hi.wheelhouse_key(["a==1"], ["b>=2"], "aarch64")


def _wheel(path: Path, members: dict, date=(2020, 1, 1, 0, 0, 0)) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(zipfile.ZipInfo(name, date), text)
    return path


def test_a_wheels_digest_is_its_content_not_its_timestamps(tmp_path):
    members = {"pkg/__init__.py": "x = 1\n",
               "pkg-0.1.0.dist-info/METADATA": "Name: pkg\nRequires-Dist: a>=1\nRequires-Dist: b; extra == \"r\"\n"}
    one = _wheel(tmp_path / "one.whl", members)
    two = _wheel(tmp_path / "two.whl", members, date=(2024, 5, 6, 7, 8, 10))
    other = _wheel(tmp_path / "other.whl", {**members, "pkg/__init__.py": "x = 2\n"})
    assert hi.wheel_content_digest(one) == hi.wheel_content_digest(two) != hi.wheel_content_digest(other)
    assert hi.wheel_requires(one) == ["a>=1", 'b; extra == "r"']


def test_a_classpath_is_rewritten_to_the_images_maven_repository(tmp_path):
    m2 = tmp_path / "m2"
    text = f"{m2}/org/x/x-1.jar:{m2}/com/y/y-2.jar\n"
    rewritten, jars = hi.image_classpath(text, m2)
    assert rewritten == f"{hi.IMAGE_CACHE}/m2/org/x/x-1.jar:{hi.IMAGE_CACHE}/m2/com/y/y-2.jar"
    assert jars == {"org/x/x-1.jar": m2 / "org/x/x-1.jar", "com/y/y-2.jar": m2 / "com/y/y-2.jar"}
    with pytest.raises(hi.ImageError, match="outside the Maven repository"):
        hi.image_classpath(f"/elsewhere/z.jar:{m2}/org/x/x-1.jar", m2)


@pytest.fixture
def plan_files(tmp_path):
    """A plan whose files exist: an own wheel, two wheels, drivers, a classpath's jar, node."""
    (tmp_path / "own").mkdir()
    own = _wheel(tmp_path / "own" / "pulsar_conformance-0.1.0-py3-none-any.whl", {"a.py": "1"})
    house = tmp_path / "house"
    house.mkdir()
    wheels = []
    for name in ("dep-1.0-py3-none-any.whl", "other-2.0-cp313-cp313-manylinux_2_28_x86_64.whl"):
        (house / name).write_bytes(b"wheel")
        wheels.append(house / name)
    built = tmp_path / "built"
    drivers = {}
    for relative in (".built", "driver-core/driver-core-1.jar", "driver-client/driver-client-1.jar"):
        (built / relative).parent.mkdir(parents=True, exist_ok=True)
        (built / relative).write_bytes(b"jar")
        drivers[relative] = built / relative
    m2 = tmp_path / "m2"
    (m2 / "org/x").mkdir(parents=True)
    (m2 / "org/x/x-1.jar").write_bytes(b"x")
    text, jars = hi.image_classpath(f"{m2}/org/x/x-1.jar", m2)
    native = {}
    for relative in ("go-drivers/built-0.21.0/.built", "go-drivers/built-0.21.0/go-driver"):
        (tmp_path / "native" / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "native" / relative).write_bytes(b"binary")
        native[relative] = tmp_path / "native" / relative
    node = tmp_path / "node"
    (node / "node_modules" / "allure").mkdir(parents=True)
    (node / "node_modules" / "allure" / "cli.js").write_text("//")
    (node / "node_modules" / ".bin").mkdir()
    (node / "node_modules" / ".bin" / "allure").symlink_to("../allure/cli.js")
    for name in ("package.json", "package-lock.json"):
        (node / name).write_text("{}")
    base = hi.Base("pulsar-conformance/debian-java:trixie-abc", "sha256:base", "local", "reused")
    return hi.ContextPlan(version="0.1.0", base=base, dockerfile="FROM ${BASE}\n", own_wheel=own,
                          own_wheel_digest=hi.wheel_content_digest(own), wheels=tuple(wheels), drivers=drivers,
                          native=native, classpaths={"client-4.0.13.txt": text}, jars=jars, node=node, lock_digest="lock")


def test_the_tag_carries_a_digest_of_everything_that_goes_in(plan_files):
    from dataclasses import replace

    plan = plan_files
    assert re.fullmatch(r"pulsar-conformance:0\.1\.0-[0-9a-f]{12}", plan.tag)
    assert plan.digest == replace(plan).digest
    changed = [replace(plan, dockerfile="FROM x\n"), replace(plan, own_wheel_digest="other"),
               replace(plan, lock_digest="other"), replace(plan, wheels=plan.wheels[:1]),
               replace(plan, base=replace(plan.base, image_id="sha256:newer")),
               replace(plan, classpaths={"client-4.0.13.txt": "/elsewhere.jar"})]
    assert len({plan.digest, *(p.digest for p in changed)}) == len(changed) + 1
    # A rebuilt driver of the same size is a change too: drivers count by content.
    binary = plan.native["go-drivers/built-0.21.0/go-driver"]
    before = plan.digest
    binary.write_bytes(b"BINARY")
    assert plan.digest != before
    assert plan.buildargs == {"BASE": plan.base.ref, "PACKAGES": " ".join(hi.PACKAGES),
                              "PYTHON_VERSION": hi.PYTHON_VERSION, "VERSION": "0.1.0", "STAGE": plan.stage}
    # The dependencies stage follows the base and the wheels only, not the package's code.
    assert replace(plan, own_wheel_digest="other").stage == plan.stage
    assert replace(plan, wheels=plan.wheels[:1]).stage != plan.stage
    assert replace(plan, base=replace(plan.base, image_id="sha256:newer")).stage != plan.stage


def test_the_context_holds_wheels_drivers_classpaths_jars_and_node(plan_files, tmp_path):
    context = tmp_path / "context"
    hi.write_context(plan_files, context)
    assert (context / "Dockerfile").read_text() == plan_files.dockerfile
    assert sorted(p.name for p in (context / "wheels").iterdir()) == sorted(w.name for w in plan_files.wheels)
    assert [p.name for p in (context / "package").iterdir()] == [plan_files.own_wheel.name]
    built = context / "cache" / "java-drivers" / "built"
    assert (built / ".built").is_file() and (built / "driver-client" / "driver-client-1.jar").is_file()
    assert (context / "cache" / "java-drivers" / "classpath" / "client-4.0.13.txt").read_text() == \
        f"{hi.IMAGE_CACHE}/m2/org/x/x-1.jar\n"
    assert (context / "cache" / "m2" / "org" / "x" / "x-1.jar").read_bytes() == b"x"
    link = context / "node" / "node_modules" / ".bin" / "allure"
    assert link.is_symlink() and link.resolve() == (context / "node" / "node_modules" / "allure" / "cli.js").resolve()
    assert (context / "node" / "package-lock.json").is_file()
    assert (context / "cache" / "go-drivers" / "built-0.21.0" / "go-driver").read_bytes() == b"binary"
    assert (context / hi.LINK_SCRIPT.name).read_text() == hi.LINK_SCRIPT.read_text()


def test_the_dockerfile_and_the_builder_name_the_same_arguments_and_paths(plan_files):
    text = hi.DOCKERFILE.read_text()
    declared = set(re.findall(r"^ARG (\w+)", text, re.MULTILINE))
    assert declared == set(plan_files.buildargs)  # every argument given, none unused
    assert re.search(rf"^ARG BASE={re.escape(hi.OFFICIAL_BASE)}$", text, re.MULTILINE)
    assert f"PULSAR_CONFORMANCE_CACHE={hi.IMAGE_CACHE}" in text
    assert all(f"COPY {folder}/" in text for folder in ("wheels", "package", "cache", "node"))
    assert 'ENTRYPOINT ["pulsar-conformance"]' in text
    # The drivers go where the installed package looks for them (link_drivers.py).
    assert f"COPY package/ {hi.LINK_SCRIPT.name} /tmp/package/" in text
    assert f"python /tmp/package/{hi.LINK_SCRIPT.name}" in text


def test_the_local_base_is_the_pulsar_images_base_machinery_with_the_harness_packages():
    plan = hi.base_plan()
    assert isinstance(plan, images.BasePlan)
    assert plan.suite == hi.SUITE and plan.packages == hi.PACKAGES
    assert plan.tag.startswith(f"{images.BASE_REPOSITORY}:{hi.SUITE}-")
    assert plan.tag != images.base_plan().tag  # not the Pulsar image's base
    command = plan.command(Path("/x/base.tar"))
    assert command[:3] == ["mmdebstrap", "--variant=minbase", "--include=" + ",".join(hi.PACKAGES)]


class _Engine:
    def __init__(self, present=(), pull_problem="no such host"):
        self.present = dict(present)
        self.pull_problem = pull_problem
        self.pulled: list[str] = []

    def image_id(self, ref):
        return self.present.get(ref)

    def pull(self, ref, timeout):
        self.pulled.append(ref)
        if self.pull_problem is None:
            self.present[ref] = "sha256:pulled"
        return self.pull_problem


def test_the_official_base_when_present_or_pulled_else_the_local_one(monkeypatch, tmp_path):
    deadline = images._Deadline(60)
    made = []
    monkeypatch.setattr(images, "build_base", lambda engine, plan, work, dl: made.append(plan.tag) or "sha256:made")
    monkeypatch.delenv(images.MODE_ENV, raising=False)

    present = hi.choose_base(_Engine({hi.OFFICIAL_BASE: "sha256:o"}), None, tmp_path, deadline, say=lambda m: None)
    assert (present.ref, present.kind, present.how) == (hi.OFFICIAL_BASE, "official", "present")
    pulled = hi.choose_base(_Engine(pull_problem=None), None, tmp_path, deadline, say=lambda m: None)
    assert (pulled.ref, pulled.how, pulled.image_id) == (hi.OFFICIAL_BASE, "pulled", "sha256:pulled")

    local = hi.choose_base(_Engine(), None, tmp_path, deadline, say=lambda m: None)
    assert (local.ref, local.kind, local.how, local.image_id) == (hi.base_plan().tag, "local", "built", "sha256:made")
    assert local.why_local == f"{hi.OFFICIAL_BASE} cannot be pulled: no such host"
    reused = hi.choose_base(_Engine({hi.base_plan().tag: "sha256:kept"}), None, tmp_path, deadline, say=lambda m: None)
    assert (reused.how, reused.image_id) == ("reused", "sha256:kept") and made == [hi.base_plan().tag]

    engine = _Engine({hi.OFFICIAL_BASE: "sha256:o"})
    assert hi.choose_base(engine, "local", tmp_path, deadline, say=lambda m: None).kind == "local"
    assert engine.pulled == []  # local never asks a registry
    with pytest.raises(TargetError, match="cannot pull debian:trixie-slim"):
        hi.choose_base(_Engine(), "official", tmp_path, deadline, say=lambda m: None)


def test_without_an_engine_the_build_says_how_to_start_one(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/harness-image-test/docker.sock")
    with pytest.raises(hi.ImageError, match="no Docker engine answers .*make docker starts one"):
        hi.build()
    assert hi.main([]) == 2


def test_every_driver_is_linked_under_the_hash_the_package_computes(tmp_path):
    from conformance.drivers import java_build, native_build
    from harness_image import link_drivers

    cache = tmp_path / "cache"
    (cache / "java-drivers" / "built").mkdir(parents=True)
    (cache / "java-drivers" / "built" / ".built").write_text("ok\n")
    with pytest.raises(SystemExit, match="built-"):
        link_drivers.link(cache)  # the native drivers are missing
    for language, (_, version, binary) in native_build.LANGUAGES.items():
        for each in (version, "9.9.9"):
            (cache / f"{language}-drivers" / f"built-{each}" / binary).parent.mkdir(parents=True, exist_ok=True)
            (cache / f"{language}-drivers" / f"built-{each}" / binary).write_text("binary")
    assert [p.name for p in (cache / "java-drivers").iterdir()] == ["built"]  # nothing linked
    made = link_drivers.link(cache)
    assert (cache / "java-drivers" / java_build.source_hash()).resolve() == cache / "java-drivers" / "built"
    for language, (_, version, binary) in native_build.LANGUAGES.items():
        for each in (version, "9.9.9"):
            linked = cache / f"{language}-drivers" / f"{native_build.source_hash(language)}-{each}"
            assert (linked / binary).read_text() == "binary" and linked in made
    assert len(made) == 1 + 2 * len(native_build.LANGUAGES)


def test_only_the_newest_harness_images_keep_their_tags():
    images = [("2026-01-03", "c", ["pulsar-conformance:0.1.0-ccc", "pulsar-conformance:latest"]),
              ("2026-01-01", "a", ["pulsar-conformance:0.1.0-aaa", "registry.example.com/x/pulsar-conformance:0.1.0"]),
              ("2026-01-02", "b", ["pulsar-conformance:0.1.0-bbb"]),
              ("2025-12-31", "z", ["pulsar-conformance:0.1.0-zzz"]),
              ("2020-01-01", "p", ["pulsar-conformance/pulsar:4.0.7-abc"])]  # the Pulsar image's: never
    assert hi.older_images(images, keep=2) == ["pulsar-conformance:0.1.0-aaa", "pulsar-conformance:0.1.0-zzz"]
    assert hi.older_images(images, keep=5) == []
    assert hi.older_stages([("id1", "aaa"), ("id2", "bbb"), ("id3", "")], current="bbb") == ["id1", "id3"]
    assert hi.older_stages([("id2", "bbb")], current="bbb") == []
    assert hi.older_images(images, keep=0) == ["pulsar-conformance:0.1.0-ccc", "pulsar-conformance:0.1.0-bbb",
                                               "pulsar-conformance:0.1.0-aaa", "pulsar-conformance:0.1.0-zzz"]
