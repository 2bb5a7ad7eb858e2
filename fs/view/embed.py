#!/usr/bin/env python3
# Turns a text file into a C header that defines it as one string:
#   embed.py INPUT OUTPUT NAME  ->  static const char NAME[] = "...";
# Used for flame.svg's script (fs/flame.js), which goes into a CDATA
# section and so must not hold "]]>".
import sys

src, dst, name = sys.argv[1:4]
text = open(src, encoding="utf-8").read()
if "]]>" in text:
    sys.exit(f"{src}: must not contain ]]>")
out = [f"/* Generated from {src.split('/')[-1]} by fs/embed.py; do not edit. */\n",
       f"static const char {name}[] =\n"]
for line in text.splitlines(keepends=True):
    esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t").replace("\n", "\\n")
    out.append(f'\t"{esc}"\n')
out.append(";\n")
open(dst, "w", encoding="utf-8").write("".join(out))
