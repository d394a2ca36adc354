"""kiln.devices(): what this build of kiln can run on."""

import dataclasses

from . import _kiln


@dataclasses.dataclass(frozen=True)
class Device:
  name: str          # "cuda:0": what device= takes
  platform: str      # "cuda"
  ordinal: int
  kind: str          # "NVIDIA H200", "host"
  description: str

  def __str__(self):
    return self.name


@dataclasses.dataclass(frozen=True)
class Platform:
  name: str
  description: str
  built: bool
  status: str        # why there are no devices ("" when there are)
  devices: tuple


def platforms():
  """Every platform kiln knows, built or not, with its devices (what `kiln devices` lists)."""
  out = []
  for name, desc, built, why, devs in _kiln.platforms():
    out.append(Platform(name, desc, built, why,
                        tuple(Device(d, name, o, k, dd) for d, o, k, dd in devs)))
  return out


def devices(platform=None):
  """The devices present, best platform first (cuda, cpu, interpreter), optionally of one
  platform only."""
  return [d for p in platforms() if platform in (None, p.name) for d in p.devices]


def default_device():
  """The name of the device kiln picks when none is named: a GPU when there is one, else cpu."""
  return _kiln.resolve_device("")
