; A small NVPTX kernel for the packager tests: y[i] = a * x[i] + y[i] for the
; thread's index. The tests compile it with llc (PTX) and ptxas (cubin) at
; test time; nothing generated is checked in.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @saxpy(float %a, ptr addrspace(1) %x, ptr addrspace(1) %y) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %ctaid, %ntid
  %i32 = add i32 %base, %tid
  %i = zext i32 %i32 to i64
  %px = getelementptr float, ptr addrspace(1) %x, i64 %i
  %py = getelementptr float, ptr addrspace(1) %y, i64 %i
  %vx = load float, ptr addrspace(1) %px
  %vy = load float, ptr addrspace(1) %py
  %ax = fmul float %a, %vx
  %r = fadd float %ax, %vy
  store float %r, ptr addrspace(1) %py
  ret void
}

define ptx_kernel void @scale(ptr addrspace(1) %p, float %s) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %tid to i64
  %gep = getelementptr float, ptr addrspace(1) %p, i64 %i
  %v = load float, ptr addrspace(1) %gep
  %m = fmul float %v, %s
  store float %m, ptr addrspace(1) %gep
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
