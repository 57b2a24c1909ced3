set terminal pngcairo size 900,560 noenhanced
set grid
set key bottom right
set output 'docs/results/acrobot/return_vs_env_steps.png'
set title 'greedy evaluation return'
set xlabel 'env steps'
set ylabel 'mean return'
plot 'docs/results/acrobot/0.acrobot-s5.eval.dat' using 2:3 with linespoints title 'acrobot-s5', 'docs/results/acrobot/1.acrobot-s6.eval.dat' using 2:3 with linespoints title 'acrobot-s6', 'docs/results/acrobot/2.acrobot-s7.eval.dat' using 2:3 with linespoints title 'acrobot-s7', 'docs/results/acrobot/3.acrobot-s8.eval.dat' using 2:3 with linespoints title 'acrobot-s8', 'docs/results/acrobot/4.acrobot-s9.eval.dat' using 2:3 with linespoints title 'acrobot-s9'
set output 'docs/results/acrobot/return_vs_time.png'
set title 'greedy evaluation return'
set xlabel 'learner wall-clock (s)'
set ylabel 'mean return'
plot 'docs/results/acrobot/0.acrobot-s5.eval.dat' using 1:3 with linespoints title 'acrobot-s5', 'docs/results/acrobot/1.acrobot-s6.eval.dat' using 1:3 with linespoints title 'acrobot-s6', 'docs/results/acrobot/2.acrobot-s7.eval.dat' using 1:3 with linespoints title 'acrobot-s7', 'docs/results/acrobot/3.acrobot-s8.eval.dat' using 1:3 with linespoints title 'acrobot-s8', 'docs/results/acrobot/4.acrobot-s9.eval.dat' using 1:3 with linespoints title 'acrobot-s9'
set output 'docs/results/acrobot/throughput.png'
set title 'throughput'
set xlabel 'learner wall-clock (s)'
set ylabel 'per second'
plot 'docs/results/acrobot/0.acrobot-s5.throughput.dat' using 1:3 with lines title 'acrobot-s5 env steps/s', 'docs/results/acrobot/0.acrobot-s5.throughput.dat' using 1:4 with lines title 'acrobot-s5 updates/s', 'docs/results/acrobot/1.acrobot-s6.throughput.dat' using 1:3 with lines title 'acrobot-s6 env steps/s', 'docs/results/acrobot/1.acrobot-s6.throughput.dat' using 1:4 with lines title 'acrobot-s6 updates/s', 'docs/results/acrobot/2.acrobot-s7.throughput.dat' using 1:3 with lines title 'acrobot-s7 env steps/s', 'docs/results/acrobot/2.acrobot-s7.throughput.dat' using 1:4 with lines title 'acrobot-s7 updates/s', 'docs/results/acrobot/3.acrobot-s8.throughput.dat' using 1:3 with lines title 'acrobot-s8 env steps/s', 'docs/results/acrobot/3.acrobot-s8.throughput.dat' using 1:4 with lines title 'acrobot-s8 updates/s', 'docs/results/acrobot/4.acrobot-s9.throughput.dat' using 1:3 with lines title 'acrobot-s9 env steps/s', 'docs/results/acrobot/4.acrobot-s9.throughput.dat' using 1:4 with lines title 'acrobot-s9 updates/s'
