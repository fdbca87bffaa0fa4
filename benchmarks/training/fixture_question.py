"""Issue 49's fixture question: "evict the least recently used entry when full" should find an
OrderedDict-based LRUCache among nine other small files, with BM25 + static (the CLI's default).

    python benchmarks/training/fixture_question.py [MODEL_DIR ...]   # default: the shipped and the distilled

Prints, for each static model, the rank of storage/cache.py and the first five paths.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

QUESTION = "evict the least recently used entry when full"
FILES = {
    "storage/cache.py": "from collections import OrderedDict\n\n\nclass LRUCache:\n"
    "    def __init__(self, capacity=128):\n        self.capacity = capacity\n        self._items = OrderedDict()\n\n"
    "    def get(self, key):\n        if key not in self._items:\n            return None\n"
    "        self._items.move_to_end(key)\n        return self._items[key]\n\n"
    "    def put(self, key, value):\n        self._items[key] = value\n        self._items.move_to_end(key)\n"
    "        if len(self._items) > self.capacity:\n            self._items.popitem(last=False)\n",
    "text/distance.py": "def levenshtein(a, b):\n    prev = list(range(len(b) + 1))\n    for i, ca in enumerate(a, 1):\n"
    "        cur = [i]\n        for j, cb in enumerate(b, 1):\n"
    "            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))\n        prev = cur\n"
    "    return prev[-1]\n",
    "text/slug.py": "import re\nimport unicodedata\n\n\ndef slugify(title):\n"
    "    text = unicodedata.normalize('NFKD', title).encode('ascii', 'ignore').decode()\n"
    "    return re.sub(r'[^a-z0-9]+', '-', text.lower()).strip('-')\n",
    "net/retry.py": "import time\n\n\nclass RetryPolicy:\n    def __init__(self, attempts=5, base=0.5):\n"
    "        self.attempts, self.base = attempts, base\n\n    def run(self, call):\n"
    "        for n in range(self.attempts):\n            try:\n                return call()\n"
    "            except ConnectionError:\n                time.sleep(self.base * 2 ** n)\n        return call()\n",
    "auth/jwt_check.py": "import hmac, hashlib, base64, json\n\n\ndef verify_token(token, secret):\n"
    "    header, payload, sig = token.split('.')\n"
    "    mac = hmac.new(secret, f'{header}.{payload}'.encode(), hashlib.sha256).digest()\n"
    "    if not hmac.compare_digest(base64.urlsafe_b64encode(mac).rstrip(b'='), sig.encode()):\n"
    "        raise ValueError('bad signature')\n    return json.loads(base64.urlsafe_b64decode(payload + '=='))\n",
    "units/temperature.go": "package units\n\n// CelsiusToFahrenheit converts a temperature.\n"
    "func CelsiusToFahrenheit(c float64) float64 {\n\treturn c*9/5 + 32\n}\n",
    "geo/haversine.py": "import math\n\n\ndef haversine(lat1, lon1, lat2, lon2):\n    r = 6371.0\n"
    "    p1, p2 = math.radians(lat1), math.radians(lat2)\n    dp, dl = p2 - p1, math.radians(lon2 - lon1)\n"
    "    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2\n"
    "    return 2 * r * math.asin(math.sqrt(a))\n",
    "auth/passwords.py": "import hashlib, os\n\n\ndef hash_password(password, salt=None):\n"
    "    salt = salt or os.urandom(16)\n"
    "    return salt, hashlib.pbkdf2_hmac('sha256', password.encode(), salt, 200_000)\n",
    "io/csv_rows.py": "import csv\n\n\ndef read_rows(path):\n    with open(path, newline='') as f:\n"
    "        return [dict(row) for row in csv.DictReader(f)]\n",
    "net/ratelimit.py": "import time\n\n\nclass TokenBucket:\n    def __init__(self, rate, burst):\n"
    "        self.rate, self.tokens, self.last = rate, burst, time.monotonic()\n        self.burst = burst\n\n"
    "    def allow(self):\n        now = time.monotonic()\n"
    "        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)\n        self.last = now\n"
    "        if self.tokens >= 1:\n            self.tokens -= 1\n            return True\n        return False\n",
}


def rank(model: str) -> tuple[int | None, list[str]]:
    from codesight_tui import CodeSight
    from codesight_tui.core.config import Settings
    from codesight_tui.core.modes import Vectors

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "fixture"
        for rel, text in FILES.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        (root / ".git").mkdir()
        settings = Settings(data_dir=Path(tmp) / "data", static_model=model)
        cs = CodeSight(root, settings=settings)
        cs.index(embed=False, static=True)
        paths = [h.path for h in cs.search(QUESTION, mode="hybrid", vectors=Vectors.STATIC, top_k=10)]
        cs.close()
    return (paths.index("storage/cache.py") + 1 if "storage/cache.py" in paths else None), paths[:5]


def main() -> int:
    models = sys.argv[1:] or ["auto", "distilled"]
    for m in models:
        r, first = rank(m)
        print(f"{m}: storage/cache.py at {r if r else 'not in the top 10'}; first five: {', '.join(first)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
