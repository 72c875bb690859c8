"""set_deterministic, set_num_threads, concurrent callers and how the library is found."""
import os
import subprocess
import sys

import pytest
import torch

import gridsampler3d
from thread_runner import run_on_threads


@pytest.fixture
def restore_options():
    yield
    gridsampler3d.set_num_threads(0)
    gridsampler3d.set_deterministic(False)


def case(seed=0):
    gen = torch.Generator().manual_seed(seed)
    inp = torch.rand(2, 4, 12, 13, 14, generator=gen)
    grid = torch.rand(2, 10, 11, 12, 3, generator=gen) * 2.2 - 1.1
    grad = torch.rand(2, 4, 10, 11, 12, generator=gen)
    return inp, grid, grad


def run_both(inp, grid, grad):
    return (gridsampler3d.grid_sample(inp, grid),) + gridsampler3d.grid_sample_backward(grad, inp, grid)


def test_deterministic_option_round_trips(restore_options):
    for value in (True, False, True):
        gridsampler3d.set_deterministic(value)
        assert gridsampler3d.is_deterministic() is value


def test_thread_count_setting(restore_options):
    for count in (1, 3, 2):
        gridsampler3d.set_num_threads(count)
        assert gridsampler3d.get_num_threads() == count
    gridsampler3d.set_num_threads(0)
    assert gridsampler3d.get_num_threads() >= 1


@pytest.mark.parametrize("deterministic", [True, False])
def test_results_are_bitwise_equal_for_any_thread_count(deterministic, restore_options):
    gridsampler3d.set_deterministic(deterministic)
    inp, grid, grad = case(1)
    gridsampler3d.set_num_threads(1)
    serial = run_both(inp, grid, grad)
    for count in (2, 3, 4):
        gridsampler3d.set_num_threads(count)
        for ours, expected in zip(run_both(inp, grid, grad), serial):
            assert torch.equal(ours, expected), f"{count} threads"


def test_concurrent_python_threads_get_the_serial_results():
    """Each Python thread has its own stream; ctypes releases the GIL, so they run at once."""
    cases = [case(seed) for seed in range(4)]
    serial = [run_both(*c) for c in cases]
    results = [None] * 8

    def work(i):
        results[i] = [run_both(*cases[i % 4]) for _ in range(3)]

    run_on_threads(work, 8)
    for i, rounds in enumerate(results):
        for outputs in rounds:
            assert all(torch.equal(a, b) for a, b in zip(outputs, serial[i % 4]))


def library_found(**env_changes):
    env = {k: v for k, v in os.environ.items() if k not in ("GRIDSAMPLER3D_LIBRARY", "GRIDSAMPLER3D_PREFIX")}
    env.update(env_changes)
    result = subprocess.run([sys.executable, "-c", "import gridsampler3d; print(gridsampler3d.library_path())"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_library_search_order():
    prefix = os.environ.get("GRIDSAMPLER3D_TEST_PREFIX")
    if prefix:  # CTest installs the library there first
        installed = os.path.join(prefix, "lib", "libgridsampler3d.so")
        assert library_found(GRIDSAMPLER3D_PREFIX=prefix) == installed
        assert library_found(GRIDSAMPLER3D_LIBRARY=installed, GRIDSAMPLER3D_PREFIX="/nowhere") == installed
    # With neither variable: the copy inside the package (pip built it there), or for a package
    # run from the checkout's python/ folder, the checkout's build tree.
    package = os.path.dirname(gridsampler3d.__file__)
    inside = os.path.join(package, "libgridsampler3d.so")
    expected = inside if os.path.isfile(inside) else os.path.join(package, "..", "..", "build", "libgridsampler3d.so")
    found = library_found()
    assert os.path.isfile(found) and os.path.samefile(found, expected), (found, expected)
