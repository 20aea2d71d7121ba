#!/usr/bin/env python3
"""Lines of every non-test Rust function, longest first: how issue 40's "no function over 120
lines" is counted.

A function runs from the line of its `fn` to the line of its closing brace (comments, strings
and char literals blanked first so their braces do not count); test code is left out (files
under tests/, files named tests.rs, and everything after `#[cfg(test)] mod tests`).

    scripts/fn_lengths.py [ROOT] [LIMIT]   prints the 25 longest, then how many exceed LIMIT
                                           (default 120); exits 1 when any does.
"""
import os,re,sys
root=sys.argv[1] if len(sys.argv)>1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
limit=int(sys.argv[2]) if len(sys.argv)>2 else 120
def blank(t):
    out=[];i=0;n=len(t)
    while i<n:
        c=t[i]
        if t.startswith('//',i):
            j=t.find('\n',i); j=n if j<0 else j; out.append(' '*(j-i)); i=j
        elif t.startswith('/*',i):
            j=t.find('*/',i)+2; out.append(re.sub(r'[^\n]',' ',t[i:j])); i=j
        elif c=='"' or (c=='r' and re.match(r'r#*"',t[i:i+5]) and (i==0 or not (t[i-1].isalnum() or t[i-1]=='_'))):
            if c=='r':
                m=re.match(r'r(#*)"',t[i:]); h=m.group(1); end='"'+h; j=t.find(end,i+len(m.group(0)))+len(end)
            else:
                j=i+1
                while t[j]!='"':
                    j+=2 if t[j]=='\\' else 1
                j+=1
            out.append(re.sub(r'[^\n]',' ',t[i:j])); i=j
        elif c=="'" and re.match(r"'(\\.|[^\\'])'",t[i:i+4]) or (c=="'" and re.match(r"'\\[xu]",t[i:i+3])):
            m=re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\x..|\\.|[^\\'])'",t[i:]); j=i+len(m.group(0)); out.append(' '*(j-i)); i=j
        else: out.append(c); i+=1
    return ''.join(out)
res=[]
for dp,dn,fn in os.walk(root):
    if '/target' in dp or '/.git' in dp or '/tests/fixtures' in dp: continue
    for f in fn:
        if not f.endswith('.rs'): continue
        p=os.path.join(dp,f)
        if '/tests/' in p[len(root):] or f=='tests.rs': continue
        t=blank(open(p).read())
        # cut test modules
        k=t.find('#[cfg(test)]\nmod tests')
        if k>=0: t=t[:k]
        for m in re.finditer(r'\bfn\s+([a-zA-Z_0-9]+)',t):
            # find body start
            j=m.end(); depth=0
            while j<len(t) and t[j] not in '{;':
                j+=1
            if j>=len(t) or t[j]==';': continue
            start_line=t.count('\n',0,m.start())+1
            d=0;k2=j
            while k2<len(t):
                if t[k2]=='{': d+=1
                elif t[k2]=='}':
                    d-=1
                    if d==0: break
                k2+=1
            end_line=t.count('\n',0,k2)+1
            res.append((end_line-start_line+1,p[len(root)+1:],start_line,m.group(1)))
res.sort(reverse=True)
for r in res[:25]:
    print(*r)
over = sum(1 for r in res if r[0] > limit)
print(f"functions over {limit} lines: {over} (of {len(res)})")
sys.exit(1 if over else 0)
