"""How the engine is built: profiles, the keyed wheelhouse, and telling which build is installed."""

import json
from pathlib import Path

import pytest

from tool_selection.lm import engine_build
from tool_selection.lm.engine_build import EngineBuildError, InstalledBuild, cmake_args, plan


@pytest.fixture
def x86(monkeypatch):
    monkeypatch.setattr(engine_build.platform, "machine", lambda: "x86_64")


def test_the_portable_x86_build_is_avx2_without_avx512_amx_or_native(x86):
    args = cmake_args("portable")
    assert "-DGGML_NATIVE=OFF" in args and "-DGGML_AVX2=ON" in args and "-DGGML_FMA=ON" in args
    assert "-DGGML_AVX512=OFF" in args
    assert {"-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"} <= set(args)
    assert not any(a.endswith("=ON") and ("AMX" in a or "AVX512" in a) for a in args)


def test_avx512_adds_avx512_but_never_amx(x86):
    args = cmake_args("avx512")
    assert "-DGGML_AVX512=ON" in args and "-DGGML_AVX512_VNNI=ON" in args and "-DGGML_NATIVE=OFF" in args
    assert not any("AMX" in a and a.endswith("=ON") for a in args)


def test_native_is_llama_cpps_default(x86):
    assert cmake_args("native")[0] == "-DGGML_NATIVE=ON"


def test_on_arm_the_portable_build_is_the_architecture_baseline(monkeypatch):
    monkeypatch.setattr(engine_build.platform, "machine", lambda: "aarch64")
    assert cmake_args("portable")[0] == "-DGGML_NATIVE=OFF"
    assert not any("AVX" in a for a in cmake_args("portable"))
    with pytest.raises(EngineBuildError, match="avx512 profile is for x86-64; this machine is aarch64"):
        cmake_args("avx512")


def test_an_unknown_profile_lists_the_known_ones():
    with pytest.raises(EngineBuildError, match="Unknown engine build profile 'fast'; known: portable, avx512, native"):
        plan("fast")


def test_the_wheelhouse_is_keyed_by_what_the_build_depends_on(x86, tmp_path, monkeypatch):
    portable, avx512 = plan("portable", wheel_dir=tmp_path), plan("avx512", wheel_dir=tmp_path)
    assert portable.key != avx512.key and portable.folder != avx512.folder
    assert portable.folder.parent == tmp_path and portable.version in portable.folder.name
    assert plan("portable", wheel_dir=tmp_path) == portable  # stable
    monkeypatch.setattr(engine_build, "cpu_flags", lambda: {"avx2"})
    native_here = plan("native", wheel_dir=tmp_path)
    monkeypatch.setattr(engine_build, "cpu_flags", lambda: {"avx2", "avx512f"})
    assert plan("native", wheel_dir=tmp_path).key != native_here.key  # a native wheel never moves to another CPU
    assert plan("portable", wheel_dir=tmp_path).key == portable.key  # a portable one does


def test_the_profile_comes_from_the_environment_when_not_given(x86, monkeypatch, tmp_path):
    monkeypatch.setenv(engine_build.PROFILE_ENV, "avx512")
    assert plan(wheel_dir=tmp_path).profile == "avx512"
    monkeypatch.delenv(engine_build.PROFILE_ENV)
    assert plan(wheel_dir=tmp_path).profile == "portable"


class FakeDist:
    def __init__(self, version, direct_url, package_dir):
        self.version, self._direct_url, self._package = version, direct_url, package_dir

    def read_text(self, name):
        return json.dumps(self._direct_url) if name == "direct_url.json" and self._direct_url else None

    def locate_file(self, name):
        return self._package


def _installed(monkeypatch, tmp_path, url):
    package = tmp_path / "site-packages" / "llama_cpp"
    (package / "lib").mkdir(parents=True, exist_ok=True)
    dist = FakeDist(engine_build.LLAMA_CPP_PYTHON_VERSION, {"url": url} if url else None, package)
    monkeypatch.setattr(engine_build.importlib.metadata, "distribution", lambda name: dist)
    return engine_build.installed_build()


def test_the_installed_build_is_read_from_where_pip_installed_it(x86, monkeypatch, tmp_path):
    build = plan("portable", wheel_dir=tmp_path / "wheels")
    ours = _installed(monkeypatch, tmp_path, f"file://{build.folder}/llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl")
    assert ours.matches(build) and ours.profile() == "portable"
    assert not ours.matches(plan("avx512", wheel_dir=tmp_path / "wheels"))

    from_pypi = _installed(monkeypatch, tmp_path, None)  # built by pip from the sdist: CPU-native
    assert not from_pypi.matches(build) and from_pypi.profile() == "pip's default (CPU-native) build"


def test_amx_kernels_are_found_in_the_cpu_backend(tmp_path):
    lib = tmp_path / "llama_cpp" / "lib"
    lib.mkdir(parents=True)
    (lib / "libggml-cpu.so").write_bytes(b"\x7fELF...ggml_vec_dot_q4_K...")
    installed = InstalledBuild("0.3.36", None, tmp_path / "llama_cpp")
    assert not installed.has_amx_kernels()
    (lib / "libggml-cpu.so").write_bytes(b"\x7fELF...ggml_backend_amx_buffer_type...")
    assert installed.has_amx_kernels()


def test_ensure_installs_this_profiles_wheel_over_any_other_build(x86, monkeypatch, tmp_path):
    build = plan("portable", wheel_dir=tmp_path / "wheels")
    calls = []
    monkeypatch.setattr(engine_build, "_pip", lambda *args, env=None: calls.append(args[:2]))

    def fake_build(b):
        b.folder.mkdir(parents=True, exist_ok=True)
        wheel = b.folder / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"
        wheel.write_bytes(b"wheel")
        calls.append(("build", b.profile))
        return wheel

    monkeypatch.setattr(engine_build, "build_wheel", fake_build)
    _installed(monkeypatch, tmp_path, None)  # an older make left pip's native build
    assert "installed" in engine_build.ensure(build)
    assert calls == [("build", "portable"), ("uninstall", "--yes"), ("install", "--quiet")]

    calls.clear()
    _installed(monkeypatch, tmp_path, f"file://{build.folder}/llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl")
    assert "is installed" in engine_build.ensure(build) and calls == []  # nothing to do, nothing built

    calls.clear()
    engine_build.ensure(build, rebuild=True)
    assert calls[0] == ("build", "portable")


def test_the_cli_shows_the_plan(x86, tmp_path, capsys):
    assert engine_build.main(["show", "--profile", "portable", "--wheel-dir", str(tmp_path)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["profile"] == "portable" and "-DGGML_NATIVE=OFF" in shown["cmake_args"]
    assert Path(shown["wheelhouse"]).parent == tmp_path and shown["built"] is False
