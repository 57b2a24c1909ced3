set terminal pngcairo size 900,560 noenhanced
set grid
set key bottom right
set output 'docs/results/lunarlander/return_vs_env_steps.png'
set title 'greedy evaluation return'
set xlabel 'env steps'
set ylabel 'mean return'
plot 'docs/results/lunarlander/0.lunarlander-s0.eval.dat' using 2:3 with linespoints title 'lunarlander-s0', 'docs/results/lunarlander/1.lunarlander-s1.eval.dat' using 2:3 with linespoints title 'lunarlander-s1', 'docs/results/lunarlander/2.lunarlander-s2.eval.dat' using 2:3 with linespoints title 'lunarlander-s2', 'docs/results/lunarlander/3.lunarlander-s3.eval.dat' using 2:3 with linespoints title 'lunarlander-s3', 'docs/results/lunarlander/4.lunarlander-s4.eval.dat' using 2:3 with linespoints title 'lunarlander-s4'
set output 'docs/results/lunarlander/return_vs_time.png'
set title 'greedy evaluation return'
set xlabel 'learner wall-clock (s)'
set ylabel 'mean return'
plot 'docs/results/lunarlander/0.lunarlander-s0.eval.dat' using 1:3 with linespoints title 'lunarlander-s0', 'docs/results/lunarlander/1.lunarlander-s1.eval.dat' using 1:3 with linespoints title 'lunarlander-s1', 'docs/results/lunarlander/2.lunarlander-s2.eval.dat' using 1:3 with linespoints title 'lunarlander-s2', 'docs/results/lunarlander/3.lunarlander-s3.eval.dat' using 1:3 with linespoints title 'lunarlander-s3', 'docs/results/lunarlander/4.lunarlander-s4.eval.dat' using 1:3 with linespoints title 'lunarlander-s4'
set output 'docs/results/lunarlander/throughput.png'
set title 'throughput'
set xlabel 'learner wall-clock (s)'
set ylabel 'per second'
plot 'docs/results/lunarlander/0.lunarlander-s0.throughput.dat' using 1:3 with lines title 'lunarlander-s0 env steps/s', 'docs/results/lunarlander/0.lunarlander-s0.throughput.dat' using 1:4 with lines title 'lunarlander-s0 updates/s', 'docs/results/lunarlander/1.lunarlander-s1.throughput.dat' using 1:3 with lines title 'lunarlander-s1 env steps/s', 'docs/results/lunarlander/1.lunarlander-s1.throughput.dat' using 1:4 with lines title 'lunarlander-s1 updates/s', 'docs/results/lunarlander/2.lunarlander-s2.throughput.dat' using 1:3 with lines title 'lunarlander-s2 env steps/s', 'docs/results/lunarlander/2.lunarlander-s2.throughput.dat' using 1:4 with lines title 'lunarlander-s2 updates/s', 'docs/results/lunarlander/3.lunarlander-s3.throughput.dat' using 1:3 with lines title 'lunarlander-s3 env steps/s', 'docs/results/lunarlander/3.lunarlander-s3.throughput.dat' using 1:4 with lines title 'lunarlander-s3 updates/s', 'docs/results/lunarlander/4.lunarlander-s4.throughput.dat' using 1:3 with lines title 'lunarlander-s4 env steps/s', 'docs/results/lunarlander/4.lunarlander-s4.throughput.dat' using 1:4 with lines title 'lunarlander-s4 updates/s'
