"""``one_blas_thread``: BLAS on one thread inside, the previous limits restored after."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from distpriv import calibrate
from distpriv.pipeline.stages.calibrate import choose_mechanism
from distpriv.util.threads import on_one_blas_thread, one_blas_thread

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def test_one_thread_inside_and_restored_after():
    np.linalg.eigh(np.eye(3))  # make sure numpy's BLAS is loaded
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        assert before and max(before) == 2
        with one_blas_thread():
            assert set(_blas_threads()) == {1}
            with one_blas_thread():  # nested: still one, and the outer limit survives
                assert set(_blas_threads()) == {1}
            assert set(_blas_threads()) == {1}
        assert _blas_threads() == before


def test_restored_when_the_body_raises():
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()

        @on_one_blas_thread
        def boom():
            assert set(_blas_threads()) == {1}
            raise RuntimeError("x")

        with pytest.raises(RuntimeError):
            boom()
        assert _blas_threads() == before


@pytest.mark.parametrize("fn", [calibrate, choose_mechanism])
def test_decorated_api_keeps_its_signature_and_docs(fn):
    params = inspect.signature(fn).parameters
    assert params["epsilon"].kind is inspect.Parameter.KEYWORD_ONLY
    assert fn.__doc__ and fn.__name__ in ("calibrate", "choose_mechanism")
