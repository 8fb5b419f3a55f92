#!/usr/bin/env python3
"""Writes the fonts dlsys-lab ships, as small subsets of Debian's fonts:

    apt-get install fonts-dejavu-core fonts-noto-cjk && pip install fonttools
    python3 scripts/gen-fonts.py

- assets/fonts/DejaVuSans-math.ttf: DejaVu Sans cut to the math, arrows,
  Greek, sub/superscript and symbol blocks lesson prose uses (Wᵀ, ∂, ←, Σ…),
  a fallback after egui's own fonts.
- assets/fonts/NotoSansSC-dlsys.otf: Noto Sans CJK SC cut to the characters
  of every zh text (and glossary gloss) in assets/**/*.ron and the kernel templates'
  comments (run again after editing them; a
  test fails when a character is missing).
"""
import glob
import re

from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont

MATH_RANGES = [
    (0x00A0, 0x00FF), (0x0300, 0x036F), (0x0370, 0x03FF), (0x1D00, 0x1DBF),
    (0x2000, 0x206F), (0x2070, 0x209F), (0x2100, 0x214F), (0x2150, 0x218F),
    (0x2190, 0x21FF), (0x2200, 0x22FF), (0x2300, 0x23FF), (0x2460, 0x24FF),
    (0x2500, 0x257F), (0x25A0, 0x25FF), (0x2600, 0x26FF), (0x2700, 0x27BF), (0x27E8, 0x27EB),
]


def cut(font, codepoints, path):
    options = subset.Options()
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=codepoints)
    subsetter.subset(font)
    font.save(path)
    print(path, len(codepoints), "code points")


def main():
    math = [c for lo, hi in MATH_RANGES for c in range(lo, hi + 1)]
    cut(TTFont("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"), math, "assets/fonts/DejaVuSans-math.ttf")

    text = ""
    for path in sorted(glob.glob("assets/**/*.ron", recursive=True)):
        for match in re.finditer(r'(?:zh|gloss):\s*"((?:[^"\\]|\\.)*)"', open(path, encoding="utf-8").read()):
            text += match.group(1)
    # The kernel templates' Chinese comments are shown in the editor.
    for path in sorted(glob.glob("shaders/wgsl/exercises/*.wgsl")):
        text += open(path, encoding="utf-8").read()
    cjk = sorted({ord(c) for c in text if ord(c) > 0x2E7F} | set(range(0x3000, 0x3040)) | set(range(0xFF00, 0xFF66)))
    collection = TTCollection("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
    sc = next(f for f in collection.fonts if "SC" in f["name"].getDebugName(1))
    cut(sc, cjk, "assets/fonts/NotoSansSC-dlsys.otf")


if __name__ == "__main__":
    main()
