"""Hide rjieba so the Chinese tests exercise the jieba fallback (CI's second run of `-m cjk`).

Put on PYTHONPATH rather than patched in conftest so the subprocesses the tests start (the real
entry point) lose rjieba too.
"""

import os
import sys

sys.modules["rjieba"] = None  # type: ignore[assignment]  # an import of it now raises ImportError
os.environ["TANSAKU_TEST_WITHOUT_RJIEBA"] = "1"
