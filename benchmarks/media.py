"""Counting an image costs reading its header, not decoding its pixels.

``python benchmarks/media.py`` times, for a 4096 x 3072 PNG and JPEG sent
as base64 in a body: fidelity's count (``probe_b64``: decode a base64
prefix, let Pillow parse the header) against decoding the image fully with
Pillow (``Image.open(...).load()``), and prints the ratio.
"""

from __future__ import annotations

import base64
import io
import time

from PIL import Image

from fidelity.tokens import media


def _image(fmt: str) -> str:
    img = Image.effect_noise((4096, 3072), 64).convert("RGB")
    buf = io.BytesIO()
    img.save(buf, fmt)
    return base64.b64encode(buf.getvalue()).decode()


def _time(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def main() -> None:
    for fmt, mime in (("PNG", "image/png"), ("JPEG", "image/jpeg")):
        payload = _image(fmt)

        def count(payload: str = payload, mime: str = mime) -> None:
            media.probe_b64.cache_clear()
            info = media.probe_b64(payload, mime)
            media.openai_image_tokens("gpt-4o", info.width, info.height)

        def decode(payload: str = payload) -> None:
            with Image.open(io.BytesIO(base64.b64decode(payload))) as img:
                img.load()

        c, d = _time(count, 20), _time(decode, 3)
        print(f"{fmt}: {len(payload) / 1e6:.1f} MB base64; count {c * 1e3:.2f} ms, "
              f"full decode {d * 1e3:.1f} ms, ratio {d / c:.0f}x")


if __name__ == "__main__":
    main()
