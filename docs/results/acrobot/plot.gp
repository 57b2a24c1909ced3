set terminal pngcairo size 900,560 noenhanced
set grid
set key bottom right
set output 'docs/results/acrobot/return_vs_env_steps.png'
set title 'greedy evaluation return'
set xlabel 'env steps'
set ylabel 'mean return'
plot 'docs/results/acrobot/0.acrobot-s0.eval.dat' using 2:3 with linespoints title 'acrobot-s0', 'docs/results/acrobot/1.acrobot-s1.eval.dat' using 2:3 with linespoints title 'acrobot-s1', 'docs/results/acrobot/2.acrobot-s2.eval.dat' using 2:3 with linespoints title 'acrobot-s2', 'docs/results/acrobot/3.acrobot-s3.eval.dat' using 2:3 with linespoints title 'acrobot-s3', 'docs/results/acrobot/4.acrobot-s4.eval.dat' using 2:3 with linespoints title 'acrobot-s4'
set output 'docs/results/acrobot/return_vs_time.png'
set title 'greedy evaluation return'
set xlabel 'learner wall-clock (s)'
set ylabel 'mean return'
plot 'docs/results/acrobot/0.acrobot-s0.eval.dat' using 1:3 with linespoints title 'acrobot-s0', 'docs/results/acrobot/1.acrobot-s1.eval.dat' using 1:3 with linespoints title 'acrobot-s1', 'docs/results/acrobot/2.acrobot-s2.eval.dat' using 1:3 with linespoints title 'acrobot-s2', 'docs/results/acrobot/3.acrobot-s3.eval.dat' using 1:3 with linespoints title 'acrobot-s3', 'docs/results/acrobot/4.acrobot-s4.eval.dat' using 1:3 with linespoints title 'acrobot-s4'
set output 'docs/results/acrobot/throughput.png'
set title 'throughput'
set xlabel 'learner wall-clock (s)'
set ylabel 'per second'
plot 'docs/results/acrobot/0.acrobot-s0.throughput.dat' using 1:3 with lines title 'acrobot-s0 env steps/s', 'docs/results/acrobot/0.acrobot-s0.throughput.dat' using 1:4 with lines title 'acrobot-s0 updates/s', 'docs/results/acrobot/1.acrobot-s1.throughput.dat' using 1:3 with lines title 'acrobot-s1 env steps/s', 'docs/results/acrobot/1.acrobot-s1.throughput.dat' using 1:4 with lines title 'acrobot-s1 updates/s', 'docs/results/acrobot/2.acrobot-s2.throughput.dat' using 1:3 with lines title 'acrobot-s2 env steps/s', 'docs/results/acrobot/2.acrobot-s2.throughput.dat' using 1:4 with lines title 'acrobot-s2 updates/s', 'docs/results/acrobot/3.acrobot-s3.throughput.dat' using 1:3 with lines title 'acrobot-s3 env steps/s', 'docs/results/acrobot/3.acrobot-s3.throughput.dat' using 1:4 with lines title 'acrobot-s3 updates/s', 'docs/results/acrobot/4.acrobot-s4.throughput.dat' using 1:3 with lines title 'acrobot-s4 env steps/s', 'docs/results/acrobot/4.acrobot-s4.throughput.dat' using 1:4 with lines title 'acrobot-s4 updates/s'
