# SPDX-License-Identifier: Apache-2.0
"""The side-by-side benchmark runner behind bench/run."""
