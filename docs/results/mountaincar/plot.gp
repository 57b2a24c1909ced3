set terminal pngcairo size 900,560 noenhanced
set grid
set key bottom right
set output 'docs/results/mountaincar/return_vs_env_steps.png'
set title 'greedy evaluation return'
set xlabel 'env steps'
set ylabel 'mean return'
plot 'docs/results/mountaincar/0.mountaincar-s5.eval.dat' using 2:3 with linespoints title 'mountaincar-s5', 'docs/results/mountaincar/1.mountaincar-s6.eval.dat' using 2:3 with linespoints title 'mountaincar-s6', 'docs/results/mountaincar/2.mountaincar-s7.eval.dat' using 2:3 with linespoints title 'mountaincar-s7', 'docs/results/mountaincar/3.mountaincar-s8.eval.dat' using 2:3 with linespoints title 'mountaincar-s8', 'docs/results/mountaincar/4.mountaincar-s9.eval.dat' using 2:3 with linespoints title 'mountaincar-s9'
set output 'docs/results/mountaincar/return_vs_time.png'
set title 'greedy evaluation return'
set xlabel 'learner wall-clock (s)'
set ylabel 'mean return'
plot 'docs/results/mountaincar/0.mountaincar-s5.eval.dat' using 1:3 with linespoints title 'mountaincar-s5', 'docs/results/mountaincar/1.mountaincar-s6.eval.dat' using 1:3 with linespoints title 'mountaincar-s6', 'docs/results/mountaincar/2.mountaincar-s7.eval.dat' using 1:3 with linespoints title 'mountaincar-s7', 'docs/results/mountaincar/3.mountaincar-s8.eval.dat' using 1:3 with linespoints title 'mountaincar-s8', 'docs/results/mountaincar/4.mountaincar-s9.eval.dat' using 1:3 with linespoints title 'mountaincar-s9'
set output 'docs/results/mountaincar/throughput.png'
set title 'throughput'
set xlabel 'learner wall-clock (s)'
set ylabel 'per second'
plot 'docs/results/mountaincar/0.mountaincar-s5.throughput.dat' using 1:3 with lines title 'mountaincar-s5 env steps/s', 'docs/results/mountaincar/0.mountaincar-s5.throughput.dat' using 1:4 with lines title 'mountaincar-s5 updates/s', 'docs/results/mountaincar/1.mountaincar-s6.throughput.dat' using 1:3 with lines title 'mountaincar-s6 env steps/s', 'docs/results/mountaincar/1.mountaincar-s6.throughput.dat' using 1:4 with lines title 'mountaincar-s6 updates/s', 'docs/results/mountaincar/2.mountaincar-s7.throughput.dat' using 1:3 with lines title 'mountaincar-s7 env steps/s', 'docs/results/mountaincar/2.mountaincar-s7.throughput.dat' using 1:4 with lines title 'mountaincar-s7 updates/s', 'docs/results/mountaincar/3.mountaincar-s8.throughput.dat' using 1:3 with lines title 'mountaincar-s8 env steps/s', 'docs/results/mountaincar/3.mountaincar-s8.throughput.dat' using 1:4 with lines title 'mountaincar-s8 updates/s', 'docs/results/mountaincar/4.mountaincar-s9.throughput.dat' using 1:3 with lines title 'mountaincar-s9 env steps/s', 'docs/results/mountaincar/4.mountaincar-s9.throughput.dat' using 1:4 with lines title 'mountaincar-s9 updates/s'
