"""Shared fixtures."""

from __future__ import annotations

import copy

import pytest

from deplbench.instances.io import instance_from_dict

from builders import tiny_dict


@pytest.fixture
def tiny():
    return instance_from_dict(tiny_dict(), "tiny")


@pytest.fixture
def tiny_data():
    return copy.deepcopy(tiny_dict())
