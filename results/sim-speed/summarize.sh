#!/bin/bash
# summarize.sh FILE: per label and scenario, min-max of wall and CPU (user+sys)
# seconds per 20 s run, and virtual s per wall s and per CPU s (20 s / time).
awk '/^#/{next} {k=$1" "$2; w=$4; c=$5+$6;
  if(!(k in n)){n[k]=0; wmin[k]=w; wmax[k]=w; cmin[k]=c; cmax[k]=c}
  n[k]++; if(w<wmin[k])wmin[k]=w; if(w>wmax[k])wmax[k]=w; if(c<cmin[k])cmin[k]=c; if(c>cmax[k])cmax[k]=c}
  END{for(k in n) printf "%-28s runs=%2d wall %.2f-%.2f s (%.1f-%.1fx)  cpu %.2f-%.2f s (%.1f-%.1fx per CPU-s)\n", k, n[k], wmin[k], wmax[k], 20/wmax[k], 20/wmin[k], cmin[k], cmax[k], 20/cmax[k], 20/cmin[k]}' "$1" | sort
