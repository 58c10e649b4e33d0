#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Regenerates the corpus of corrupt SPIR-V that tests/unit/test_vulkan.c loads
# (each must be -EINVAL at devq_kernel_load, refused by the validator
# before any driver call).  Each file is tests/conformance/add_u32.spv
# with one defect; missing-entry.spv is add_u32 without its OpEntryPoint
# and OpExecutionMode* (spirv-dis | grep -v | spirv-as, so it is made
# only where spirv-tools is installed).
#   run from the source tree's top: tests/vulkan-spirv-bad/make-corpus.py
import struct
import subprocess

SRC = 'tests/conformance/add_u32.spv'
OUT = 'tests/vulkan-spirv-bad/'

data = open(SRC, 'rb').read()
words = list(struct.unpack('<%dI' % (len(data) // 4), data))


def save(name, ws):
    with open(OUT + name, 'wb') as f:
        f.write(struct.pack('<%dI' % len(ws), *ws))


def patched(index, value):
    ws = list(words)
    ws[index] = value
    return ws


# Cut inside the OpEntryPoint (opcode 15), two words into it: the
# validation layer hung in vkCreateShaderModule on such a module.
i = 5
while words[i] & 0xffff != 15:
    i += words[i] >> 16
save('truncated.spv', words[:i + 2])
save('bad-id-bound.spv', patched(3, 8))          # ids up to 43 are used
save('bad-magic.spv', patched(0, 0x07230204))
save('wrong-version.spv', patched(1, 0x00020000))  # SPIR-V 2.0
assert words[5] == (2 << 16 | 17) and words[6] == 1  # OpCapability Shader
save('unknown-capability.spv', patched(6, 0x7777))

text = subprocess.run(['spirv-dis', SRC], check=True, capture_output=True, text=True).stdout
text = ''.join(l for l in text.splitlines(True) if 'OpEntryPoint' not in l and 'OpExecutionMode' not in l)
subprocess.run(['spirv-as', '--target-env', 'vulkan1.3', '-', '-o', OUT + 'missing-entry.spv'],
               input=text, check=True, text=True)
