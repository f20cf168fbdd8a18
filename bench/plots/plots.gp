# Written by bench-trace --plot; run: gnuplot plots.gp
set grid
set datafile separator '\t'
set terminal pngcairo size 1100,600 font ',10'
set output 'gpus-in-use.png'
set title "philly.csv: 5000 jobs on 64 nodes x 8 GPUs"
unset logscale
set xlabel 'days since the first submission'
set ylabel 'GPUs of running jobs'
set key top right
plot 'series-0.dat' using 1:2 with steps lw 2 title 'kube-batch', 'series-1.dat' using 1:2 with steps lw 2 title 'fifo', 'series-2.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'series-3.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set terminal pngcairo size 1100,600 font ',10'
set output 'jobs-waiting.png'
set title "philly.csv: 5000 jobs on 64 nodes x 8 GPUs"
set ylabel 'jobs waiting (arrived, not running)'
plot 'series-0.dat' using 1:3 with steps lw 2 title 'kube-batch', 'series-1.dat' using 1:3 with steps lw 2 title 'fifo', 'series-2.dat' using 1:3 with steps lw 2 title 'kube-batchd', 'series-3.dat' using 1:3 with steps lw 2 title 'kube-batchd+reserve'
set terminal pngcairo size 1100,600 font ',10'
set output 'wait-cdf.png'
set title "philly.csv: 5000 jobs on 64 nodes x 8 GPUs"
set logscale x
set xlabel 'queueing delay (hours)'
set ylabel 'fraction of jobs'
set xrange [0.01:*]
set yrange [0:1]
set key bottom right
plot 'wait-0-5.dat' using 1:2 with steps lw 2 title 'kube-batch', 'wait-1-5.dat' using 1:2 with steps lw 2 title 'fifo', 'wait-2-5.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'wait-3-5.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set terminal pngcairo size 1100,600 font ',10'
set output 'wait-cdf-by-size.png'
set title "philly.csv: 5000 jobs on 64 nodes x 8 GPUs"
set multiplot layout 2,3
set title "1 GPUs"
plot 'wait-0-0.dat' using 1:2 with steps lw 2 title 'kube-batch', 'wait-1-0.dat' using 1:2 with steps lw 2 title 'fifo', 'wait-2-0.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'wait-3-0.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "2-4 GPUs"
plot 'wait-0-1.dat' using 1:2 with steps lw 2 title 'kube-batch', 'wait-1-1.dat' using 1:2 with steps lw 2 title 'fifo', 'wait-2-1.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'wait-3-1.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "5-8 GPUs"
plot 'wait-0-2.dat' using 1:2 with steps lw 2 title 'kube-batch', 'wait-1-2.dat' using 1:2 with steps lw 2 title 'fifo', 'wait-2-2.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'wait-3-2.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "9-16 GPUs"
plot 'wait-0-3.dat' using 1:2 with steps lw 2 title 'kube-batch', 'wait-1-3.dat' using 1:2 with steps lw 2 title 'fifo', 'wait-2-3.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'wait-3-3.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "17+ GPUs"
plot 'wait-0-4.dat' using 1:2 with steps lw 2 title 'kube-batch', 'wait-1-4.dat' using 1:2 with steps lw 2 title 'fifo', 'wait-2-4.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'wait-3-4.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
unset multiplot
set xrange [*:*]
set yrange [*:*]
set terminal pngcairo size 1100,600 font ',10'
set output 'jct-cdf.png'
set title "philly.csv: 5000 jobs on 64 nodes x 8 GPUs"
set logscale x
set xlabel 'job completion time (hours)'
set ylabel 'fraction of jobs'
set xrange [0.01:*]
set yrange [0:1]
set key bottom right
plot 'jct-0-5.dat' using 1:2 with steps lw 2 title 'kube-batch', 'jct-1-5.dat' using 1:2 with steps lw 2 title 'fifo', 'jct-2-5.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'jct-3-5.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set terminal pngcairo size 1100,600 font ',10'
set output 'jct-cdf-by-size.png'
set title "philly.csv: 5000 jobs on 64 nodes x 8 GPUs"
set multiplot layout 2,3
set title "1 GPUs"
plot 'jct-0-0.dat' using 1:2 with steps lw 2 title 'kube-batch', 'jct-1-0.dat' using 1:2 with steps lw 2 title 'fifo', 'jct-2-0.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'jct-3-0.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "2-4 GPUs"
plot 'jct-0-1.dat' using 1:2 with steps lw 2 title 'kube-batch', 'jct-1-1.dat' using 1:2 with steps lw 2 title 'fifo', 'jct-2-1.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'jct-3-1.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "5-8 GPUs"
plot 'jct-0-2.dat' using 1:2 with steps lw 2 title 'kube-batch', 'jct-1-2.dat' using 1:2 with steps lw 2 title 'fifo', 'jct-2-2.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'jct-3-2.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "9-16 GPUs"
plot 'jct-0-3.dat' using 1:2 with steps lw 2 title 'kube-batch', 'jct-1-3.dat' using 1:2 with steps lw 2 title 'fifo', 'jct-2-3.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'jct-3-3.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "17+ GPUs"
plot 'jct-0-4.dat' using 1:2 with steps lw 2 title 'kube-batch', 'jct-1-4.dat' using 1:2 with steps lw 2 title 'fifo', 'jct-2-4.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'jct-3-4.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
unset multiplot
set xrange [*:*]
set yrange [*:*]
set terminal svg size 1100,600 dynamic font 'sans,10'
set output 'gpus-in-use.svg'
set title "philly.csv: 5000 jobs on 64 nodes x 8 GPUs"
unset logscale
set xlabel 'days since the first submission'
set ylabel 'GPUs of running jobs'
set key top right
plot 'series-0.dat' using 1:2 with steps lw 2 title 'kube-batch', 'series-1.dat' using 1:2 with steps lw 2 title 'fifo', 'series-2.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'series-3.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set terminal svg size 1100,600 dynamic font 'sans,10'
set output 'jobs-waiting.svg'
set title "philly.csv: 5000 jobs on 64 nodes x 8 GPUs"
set ylabel 'jobs waiting (arrived, not running)'
plot 'series-0.dat' using 1:3 with steps lw 2 title 'kube-batch', 'series-1.dat' using 1:3 with steps lw 2 title 'fifo', 'series-2.dat' using 1:3 with steps lw 2 title 'kube-batchd', 'series-3.dat' using 1:3 with steps lw 2 title 'kube-batchd+reserve'
set terminal svg size 1100,600 dynamic font 'sans,10'
set output 'wait-cdf.svg'
set title "philly.csv: 5000 jobs on 64 nodes x 8 GPUs"
set logscale x
set xlabel 'queueing delay (hours)'
set ylabel 'fraction of jobs'
set xrange [0.01:*]
set yrange [0:1]
set key bottom right
plot 'wait-0-5.dat' using 1:2 with steps lw 2 title 'kube-batch', 'wait-1-5.dat' using 1:2 with steps lw 2 title 'fifo', 'wait-2-5.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'wait-3-5.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set terminal svg size 1100,600 dynamic font 'sans,10'
set output 'wait-cdf-by-size.svg'
set title "philly.csv: 5000 jobs on 64 nodes x 8 GPUs"
set multiplot layout 2,3
set title "1 GPUs"
plot 'wait-0-0.dat' using 1:2 with steps lw 2 title 'kube-batch', 'wait-1-0.dat' using 1:2 with steps lw 2 title 'fifo', 'wait-2-0.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'wait-3-0.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "2-4 GPUs"
plot 'wait-0-1.dat' using 1:2 with steps lw 2 title 'kube-batch', 'wait-1-1.dat' using 1:2 with steps lw 2 title 'fifo', 'wait-2-1.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'wait-3-1.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "5-8 GPUs"
plot 'wait-0-2.dat' using 1:2 with steps lw 2 title 'kube-batch', 'wait-1-2.dat' using 1:2 with steps lw 2 title 'fifo', 'wait-2-2.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'wait-3-2.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "9-16 GPUs"
plot 'wait-0-3.dat' using 1:2 with steps lw 2 title 'kube-batch', 'wait-1-3.dat' using 1:2 with steps lw 2 title 'fifo', 'wait-2-3.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'wait-3-3.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "17+ GPUs"
plot 'wait-0-4.dat' using 1:2 with steps lw 2 title 'kube-batch', 'wait-1-4.dat' using 1:2 with steps lw 2 title 'fifo', 'wait-2-4.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'wait-3-4.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
unset multiplot
set xrange [*:*]
set yrange [*:*]
set terminal svg size 1100,600 dynamic font 'sans,10'
set output 'jct-cdf.svg'
set title "philly.csv: 5000 jobs on 64 nodes x 8 GPUs"
set logscale x
set xlabel 'job completion time (hours)'
set ylabel 'fraction of jobs'
set xrange [0.01:*]
set yrange [0:1]
set key bottom right
plot 'jct-0-5.dat' using 1:2 with steps lw 2 title 'kube-batch', 'jct-1-5.dat' using 1:2 with steps lw 2 title 'fifo', 'jct-2-5.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'jct-3-5.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set terminal svg size 1100,600 dynamic font 'sans,10'
set output 'jct-cdf-by-size.svg'
set title "philly.csv: 5000 jobs on 64 nodes x 8 GPUs"
set multiplot layout 2,3
set title "1 GPUs"
plot 'jct-0-0.dat' using 1:2 with steps lw 2 title 'kube-batch', 'jct-1-0.dat' using 1:2 with steps lw 2 title 'fifo', 'jct-2-0.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'jct-3-0.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "2-4 GPUs"
plot 'jct-0-1.dat' using 1:2 with steps lw 2 title 'kube-batch', 'jct-1-1.dat' using 1:2 with steps lw 2 title 'fifo', 'jct-2-1.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'jct-3-1.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "5-8 GPUs"
plot 'jct-0-2.dat' using 1:2 with steps lw 2 title 'kube-batch', 'jct-1-2.dat' using 1:2 with steps lw 2 title 'fifo', 'jct-2-2.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'jct-3-2.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "9-16 GPUs"
plot 'jct-0-3.dat' using 1:2 with steps lw 2 title 'kube-batch', 'jct-1-3.dat' using 1:2 with steps lw 2 title 'fifo', 'jct-2-3.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'jct-3-3.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
set title "17+ GPUs"
plot 'jct-0-4.dat' using 1:2 with steps lw 2 title 'kube-batch', 'jct-1-4.dat' using 1:2 with steps lw 2 title 'fifo', 'jct-2-4.dat' using 1:2 with steps lw 2 title 'kube-batchd', 'jct-3-4.dat' using 1:2 with steps lw 2 title 'kube-batchd+reserve'
unset multiplot
set xrange [*:*]
set yrange [*:*]
unset output
