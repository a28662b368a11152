# SPDX-License-Identifier: BSD-3-Clause
#
# kbv-perf --plot (tools/perf/plot.hpp): gnuplot 5 script, run as
#   gnuplot -e "out='F.svg'; samples='S'; rows='R'; mode='lat'; ..." kbv-perf-plot.gp
# Variables: out (.svg or .png), mode ('lat' or 'bw'), title, nsizes, rows
# (lat: "bytes t_typical p99 p99.9" per size; bw: "bytes bw_avg bw_peak
# msg_rate" per size); latency also samples (one usec per line, the first
# size), hbytes (its size), n (its count), p50, p99, p999, lo (the smallest
# sample), binw (histogram bin width).
if (out[strlen(out)-2:] eq 'svg') {
  set terminal svg size 1080,400 dynamic font 'sans,11' background rgb 'white'
} else {
  set terminal pngcairo size 1080,400 font 'sans,10' background rgb 'white'
}
set output out
set termoption noenhanced  # names such as RDMA_Write and t_typical as they are
set grid lc rgb '#dddddd'
set key top left
set tics nomirror

if (mode eq 'lat') {
  set multiplot layout 1, (nsizes > 1 ? 3 : 2) title title
  # Histogram up to p99.9 (the tail beyond is in the CDF).
  set title sprintf('%d B: histogram (to p99.9)', hbytes)
  set xlabel 'latency [usec]'
  set ylabel 'iterations'
  set style fill solid 0.7 border -1
  set boxwidth binw
  set xrange [lo - binw : p999 + binw]
  bin(x) = binw * floor((x - lo) / binw) + lo + binw / 2
  plot samples using (bin($1)):(1.0) smooth frequency with boxes lc rgb '#4472c4' notitle
  # CDF over every sample, log x, the percentiles marked.
  unset xrange
  set title sprintf('%d B: CDF (%d samples)', hbytes, n)
  set ylabel 'fraction of iterations'
  set yrange [0:1.02]
  set logscale x
  set arrow 1 from p50, graph 0 to p50, graph 1 nohead dt 2 lc rgb '#2e7d32'
  set arrow 2 from p99, graph 0 to p99, graph 1 nohead dt 2 lc rgb '#ef6c00'
  set arrow 3 from p999, graph 0 to p999, graph 1 nohead dt 2 lc rgb '#c62828'
  set label 1 sprintf(' p50 %.2f', p50) at p50, graph 0.30 tc rgb '#2e7d32'
  set label 2 sprintf(' p99 %.2f', p99) at p99, graph 0.20 tc rgb '#ef6c00'
  set label 3 sprintf(' p99.9 %.2f', p999) at p999, graph 0.10 tc rgb '#c62828'
  plot samples using 1:(1.0 / n) smooth cumulative with lines lw 2 lc rgb '#4472c4' notitle
  unset arrow
  unset label
  unset logscale x
  if (nsizes > 1) {
    set title 'latency against message size'
    set xlabel 'message size [bytes]'
    set ylabel 'usec'
    set autoscale y
    set logscale y
    set logscale x 2
    set format x '%.0s%cB'
    plot rows using 1:2 with linespoints pt 7 lc rgb '#4472c4' title 't_typical', \
         rows using 1:3 with linespoints pt 5 lc rgb '#ef6c00' title 'p99', \
         rows using 1:4 with linespoints pt 9 lc rgb '#c62828' title 'p99.9'
  }
  unset multiplot
} else {
  set multiplot layout 1, 2 title title
  set xlabel 'message size [bytes]'
  set logscale x 2
  set logscale y
  set format x '%.0s%cB'
  set title 'bandwidth'
  set ylabel 'MB/sec (2^20 bytes/s)'
  plot rows using 1:2 with linespoints pt 7 lc rgb '#4472c4' title 'BW average', \
       rows using 1:3 with linespoints pt 5 lc rgb '#ef6c00' title 'BW peak'
  set title 'message rate'
  set ylabel 'Mpps'
  plot rows using 1:4 with linespoints pt 7 lc rgb '#2e7d32' title 'MsgRate'
  unset multiplot
}
