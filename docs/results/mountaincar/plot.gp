set terminal pngcairo size 900,560 noenhanced
set grid
set key bottom right
set output 'docs/results/mountaincar/return_vs_env_steps.png'
set title 'greedy evaluation return'
set xlabel 'env steps'
set ylabel 'mean return'
plot 'docs/results/mountaincar/0.mountaincar-s0.eval.dat' using 2:3 with linespoints title 'mountaincar-s0', 'docs/results/mountaincar/1.mountaincar-s1.eval.dat' using 2:3 with linespoints title 'mountaincar-s1', 'docs/results/mountaincar/2.mountaincar-s2.eval.dat' using 2:3 with linespoints title 'mountaincar-s2', 'docs/results/mountaincar/3.mountaincar-s3.eval.dat' using 2:3 with linespoints title 'mountaincar-s3', 'docs/results/mountaincar/4.mountaincar-s4.eval.dat' using 2:3 with linespoints title 'mountaincar-s4'
set output 'docs/results/mountaincar/return_vs_time.png'
set title 'greedy evaluation return'
set xlabel 'learner wall-clock (s)'
set ylabel 'mean return'
plot 'docs/results/mountaincar/0.mountaincar-s0.eval.dat' using 1:3 with linespoints title 'mountaincar-s0', 'docs/results/mountaincar/1.mountaincar-s1.eval.dat' using 1:3 with linespoints title 'mountaincar-s1', 'docs/results/mountaincar/2.mountaincar-s2.eval.dat' using 1:3 with linespoints title 'mountaincar-s2', 'docs/results/mountaincar/3.mountaincar-s3.eval.dat' using 1:3 with linespoints title 'mountaincar-s3', 'docs/results/mountaincar/4.mountaincar-s4.eval.dat' using 1:3 with linespoints title 'mountaincar-s4'
set output 'docs/results/mountaincar/throughput.png'
set title 'throughput'
set xlabel 'learner wall-clock (s)'
set ylabel 'per second'
plot 'docs/results/mountaincar/0.mountaincar-s0.throughput.dat' using 1:3 with lines title 'mountaincar-s0 env steps/s', 'docs/results/mountaincar/0.mountaincar-s0.throughput.dat' using 1:4 with lines title 'mountaincar-s0 updates/s', 'docs/results/mountaincar/1.mountaincar-s1.throughput.dat' using 1:3 with lines title 'mountaincar-s1 env steps/s', 'docs/results/mountaincar/1.mountaincar-s1.throughput.dat' using 1:4 with lines title 'mountaincar-s1 updates/s', 'docs/results/mountaincar/2.mountaincar-s2.throughput.dat' using 1:3 with lines title 'mountaincar-s2 env steps/s', 'docs/results/mountaincar/2.mountaincar-s2.throughput.dat' using 1:4 with lines title 'mountaincar-s2 updates/s', 'docs/results/mountaincar/3.mountaincar-s3.throughput.dat' using 1:3 with lines title 'mountaincar-s3 env steps/s', 'docs/results/mountaincar/3.mountaincar-s3.throughput.dat' using 1:4 with lines title 'mountaincar-s3 updates/s', 'docs/results/mountaincar/4.mountaincar-s4.throughput.dat' using 1:3 with lines title 'mountaincar-s4 env steps/s', 'docs/results/mountaincar/4.mountaincar-s4.throughput.dat' using 1:4 with lines title 'mountaincar-s4 updates/s'
