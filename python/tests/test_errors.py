"""Each kind of failure raises its kiln exception class, with the message the `kiln` tool
prints."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

import kiln

ADD = """HloModule add
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] add(x, x)
}
"""
MALFORMED = """HloModule bad
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] add(x, )
}
"""
UNKNOWN_CUSTOM_CALL = """HloModule cc
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] custom-call(x), custom_call_target="kiln_test_no_such_target"
}
"""


def test_hierarchy():
  assert issubclass(kiln.InvalidArgumentError, kiln.KilnError)
  assert issubclass(kiln.InvalidArgumentError, ValueError)
  assert issubclass(kiln.UnimplementedError, kiln.KilnError)
  assert issubclass(kiln.UnimplementedError, NotImplementedError)
  assert issubclass(kiln.UnavailableError, kiln.KilnError)
  assert issubclass(kiln.FailedPreconditionError, kiln.KilnError)
  assert issubclass(kiln.ResourceExhaustedError, kiln.KilnError)
  assert issubclass(kiln.DeadlineExceededError, kiln.KilnError)
  assert issubclass(kiln.DeadlineExceededError, TimeoutError)
  assert kiln.DeadlineExceededError.code == "DEADLINE_EXCEEDED"


def test_malformed_hlo_is_invalid_argument_with_position():
  with pytest.raises(kiln.InvalidArgumentError) as e:
    kiln.compile(MALFORMED, "cpu", filename="bad.hlo")
  assert isinstance(e.value, ValueError)
  assert "bad.hlo:4:" in str(e.value)


def test_message_is_the_cli_message(tmp_path):
  tool = os.environ.get("KILN_TOOL")
  if not tool or not pathlib.Path(tool).exists():
    pytest.skip("KILN_TOOL (the kiln binary) not given")
  path = tmp_path / "bad.hlo"
  path.write_text(MALFORMED)
  cli = subprocess.run([tool, "compile", str(path)], capture_output=True, text=True)
  assert cli.returncode != 0
  with pytest.raises(kiln.InvalidArgumentError) as e:
    kiln.compile(MALFORMED, "cpu", filename=str(path))
  # The tool prints the parse error as is (PrintLoadError), one or more lines with the caret.
  assert str(e.value).strip() in cli.stderr, f"python: {e.value!s}\ncli: {cli.stderr}"


def test_unknown_device_is_invalid_argument():
  with pytest.raises(kiln.InvalidArgumentError, match="unknown device 'tpu'"):
    kiln.compile(ADD, "tpu")
  with pytest.raises(kiln.InvalidArgumentError, match="cpu has 1 device"):
    kiln.compile(ADD, "cpu:3")


def test_platform_not_built_is_unavailable():
  with pytest.raises(kiln.UnavailableError, match="rocm"):
    kiln.compile(ADD, "rocm")


def test_unknown_custom_call_is_unimplemented():
  with pytest.raises(kiln.UnimplementedError) as e:
    kiln.compile(UNKNOWN_CUSTOM_CALL, "cpu").run(np.ones(4, np.float32))
  assert isinstance(e.value, NotImplementedError)
  assert "kiln_test_no_such_target" in str(e.value)


def test_wrong_arguments_are_invalid_argument():
  exe = kiln.compile(ADD, "cpu")
  with pytest.raises(kiln.InvalidArgumentError, match="takes 1 argument array, got 2"):
    exe.run(np.ones(4, np.float32), np.ones(4, np.float32))
  with pytest.raises(kiln.InvalidArgumentError, match="argument 0"):
    exe.run(np.ones(5, np.float32))
  with pytest.raises(kiln.InvalidArgumentError, match="argument 0"):
    exe.run(np.ones(4, np.int32))


def test_donated_array_is_failed_precondition():
  exe = kiln.compile(ADD.replace("HloModule add", "HloModule add, input_output_alias={ {}: (0, {}, may-alias) }"), "cpu")
  a = exe.run(np.ones(4, np.float32))
  b = exe.run(a)
  np.testing.assert_array_equal(b.numpy(), 4 * np.ones(4))
  assert a.is_deleted
  with pytest.raises(kiln.FailedPreconditionError, match="donated"):
    a.numpy()
  with pytest.raises(kiln.FailedPreconditionError, match="donated"):
    exe.run(a)
  with pytest.raises(BufferError, match="donated"):
    np.from_dlpack(a)


def test_out_of_memory_is_resource_exhausted():
  huge = """HloModule huge
ENTRY main {
  x = f32[] parameter(0)
  ROOT b = f32[1099511627776] broadcast(x), dimensions={}
}
"""
  with pytest.raises(kiln.ResourceExhaustedError):
    kiln.compile(huge, "cpu").run(np.float32(1))


def test_bad_autotune_level():
  with pytest.raises(kiln.InvalidArgumentError, match="autotune"):
    kiln.compile(ADD, "cpu", autotune="sometimes")


def test_jit_errors_are_kiln_errors():
  import jax.numpy as jnp
  with pytest.raises(kiln.InvalidArgumentError):
    kiln.jit(lambda x: x, static_argnums=0, donate_argnums=0)
  f = kiln.jit(lambda x: jnp.sin(x), device="rocm")
  with pytest.raises(kiln.UnavailableError):
    f(np.ones(3, np.float32))
