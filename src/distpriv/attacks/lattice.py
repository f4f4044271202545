"""Moved to :mod:`distpriv.modeling.lattice` (one lattice module for the floors and the
decoder); kept so that old imports still work.

``detect_lattice`` here is the decoder's detection from samples,
:func:`distpriv.modeling.lattice.detect_sample_lattice`.
"""

from __future__ import annotations

from ..modeling.lattice import LatticeDecoder, lattice_decoder
from ..modeling.lattice import detect_sample_lattice as detect_lattice

__all__ = ["LatticeDecoder", "detect_lattice", "lattice_decoder"]
