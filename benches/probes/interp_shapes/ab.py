#!/usr/bin/env python3
"""Interleaved rounds: each round runs every implementation once on a program, order
rotating. Usage: ab.py REPS DIR prog[,prog...] impl... where impl is lua or a path to a
marvin binary. Prints per program the median time of each and the median of per-round
ratios to lua (and of each marvin vs the first marvin)."""
import subprocess, sys, time, statistics, os
reps=int(sys.argv[1]); d=sys.argv[2]; progs=sys.argv[3].split(','); impls=sys.argv[4:]
def cmd(impl,p):
    if impl=='lua': return ['lua5.4',f'{d}/peers/{p}.lua']
    return [impl,'run',f'{d}/programs/{p}.masm']
CPU=os.environ.get('CPU')=='1'
def run(c):
    t=time.perf_counter(); pr=subprocess.Popen(c,stdout=subprocess.PIPE,stderr=subprocess.STDOUT)
    out=pr.stdout.read(); _,st,ru=os.wait4(pr.pid,0); t=time.perf_counter()-t
    if st!=0: raise SystemExit(f'{c} failed: {out[-300:]}')
    return (ru.ru_utime+ru.ru_stime if CPU else t), out
print('load', os.getloadavg(), 'cpu' if CPU else 'wall')
for p in progs:
    outs=set()
    for i in impls: outs.add(run(cmd(i,p))[1])  # warm-up
    if len(outs)!=1: raise SystemExit(f'{p}: outputs differ {outs}')
    times={i:[] for i in impls}
    for r in range(reps):
        order=impls[r%len(impls):]+impls[:r%len(impls)]
        for i in order: times[i].append(run(cmd(i,p))[0])
    base='lua' if 'lua' in impls else impls[0]
    ms=[i for i in impls if i!='lua']
    line=f'{p:10s}'
    if 'lua' in impls: line+=f' lua {statistics.median(times["lua"])*1000:7.1f}ms'
    for i in ms:
        name=os.path.basename(i)
        rr=[a/b for a,b in zip(times[i],times[base])]
        line+=f' | {name} {statistics.median(times[i])*1000:7.1f}ms r={statistics.median(rr):.3f} [{min(rr):.2f}-{max(rr):.2f}]'
        if i!=ms[0]:
            rr2=[a/b for a,b in zip(times[i],times[ms[0]])]
            line+=f' vs0={statistics.median(rr2):.3f} [{min(rr2):.2f}-{max(rr2):.2f}]'
    print(line, flush=True)
print('load', os.getloadavg())
