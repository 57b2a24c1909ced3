set terminal pngcairo size 900,560 noenhanced
set grid
set key bottom right
set output 'docs/results/cartpole/return_vs_env_steps.png'
set title 'greedy evaluation return'
set xlabel 'env steps'
set ylabel 'mean return'
plot 'docs/results/cartpole/0.cartpole-s5.eval.dat' using 2:3 with linespoints title 'cartpole-s5', 'docs/results/cartpole/1.cartpole-s6.eval.dat' using 2:3 with linespoints title 'cartpole-s6', 'docs/results/cartpole/2.cartpole-s7.eval.dat' using 2:3 with linespoints title 'cartpole-s7', 'docs/results/cartpole/3.cartpole-s8.eval.dat' using 2:3 with linespoints title 'cartpole-s8', 'docs/results/cartpole/4.cartpole-s9.eval.dat' using 2:3 with linespoints title 'cartpole-s9'
set output 'docs/results/cartpole/return_vs_time.png'
set title 'greedy evaluation return'
set xlabel 'learner wall-clock (s)'
set ylabel 'mean return'
plot 'docs/results/cartpole/0.cartpole-s5.eval.dat' using 1:3 with linespoints title 'cartpole-s5', 'docs/results/cartpole/1.cartpole-s6.eval.dat' using 1:3 with linespoints title 'cartpole-s6', 'docs/results/cartpole/2.cartpole-s7.eval.dat' using 1:3 with linespoints title 'cartpole-s7', 'docs/results/cartpole/3.cartpole-s8.eval.dat' using 1:3 with linespoints title 'cartpole-s8', 'docs/results/cartpole/4.cartpole-s9.eval.dat' using 1:3 with linespoints title 'cartpole-s9'
set output 'docs/results/cartpole/throughput.png'
set title 'throughput'
set xlabel 'learner wall-clock (s)'
set ylabel 'per second'
plot 'docs/results/cartpole/0.cartpole-s5.throughput.dat' using 1:3 with lines title 'cartpole-s5 env steps/s', 'docs/results/cartpole/0.cartpole-s5.throughput.dat' using 1:4 with lines title 'cartpole-s5 updates/s', 'docs/results/cartpole/1.cartpole-s6.throughput.dat' using 1:3 with lines title 'cartpole-s6 env steps/s', 'docs/results/cartpole/1.cartpole-s6.throughput.dat' using 1:4 with lines title 'cartpole-s6 updates/s', 'docs/results/cartpole/2.cartpole-s7.throughput.dat' using 1:3 with lines title 'cartpole-s7 env steps/s', 'docs/results/cartpole/2.cartpole-s7.throughput.dat' using 1:4 with lines title 'cartpole-s7 updates/s', 'docs/results/cartpole/3.cartpole-s8.throughput.dat' using 1:3 with lines title 'cartpole-s8 env steps/s', 'docs/results/cartpole/3.cartpole-s8.throughput.dat' using 1:4 with lines title 'cartpole-s8 updates/s', 'docs/results/cartpole/4.cartpole-s9.throughput.dat' using 1:3 with lines title 'cartpole-s9 env steps/s', 'docs/results/cartpole/4.cartpole-s9.throughput.dat' using 1:4 with lines title 'cartpole-s9 updates/s'
