set terminal pngcairo size 900,560 noenhanced
set grid
set key bottom right
set output 'docs/results/lunarlander/return_vs_env_steps.png'
set title 'greedy evaluation return'
set xlabel 'env steps'
set ylabel 'mean return'
plot 'docs/results/lunarlander/0.lunarlander-s5.eval.dat' using 2:3 with linespoints title 'lunarlander-s5', 'docs/results/lunarlander/1.lunarlander-s6.eval.dat' using 2:3 with linespoints title 'lunarlander-s6', 'docs/results/lunarlander/2.lunarlander-s7.eval.dat' using 2:3 with linespoints title 'lunarlander-s7', 'docs/results/lunarlander/3.lunarlander-s8.eval.dat' using 2:3 with linespoints title 'lunarlander-s8', 'docs/results/lunarlander/4.lunarlander-s9.eval.dat' using 2:3 with linespoints title 'lunarlander-s9'
set output 'docs/results/lunarlander/return_vs_time.png'
set title 'greedy evaluation return'
set xlabel 'learner wall-clock (s)'
set ylabel 'mean return'
plot 'docs/results/lunarlander/0.lunarlander-s5.eval.dat' using 1:3 with linespoints title 'lunarlander-s5', 'docs/results/lunarlander/1.lunarlander-s6.eval.dat' using 1:3 with linespoints title 'lunarlander-s6', 'docs/results/lunarlander/2.lunarlander-s7.eval.dat' using 1:3 with linespoints title 'lunarlander-s7', 'docs/results/lunarlander/3.lunarlander-s8.eval.dat' using 1:3 with linespoints title 'lunarlander-s8', 'docs/results/lunarlander/4.lunarlander-s9.eval.dat' using 1:3 with linespoints title 'lunarlander-s9'
set output 'docs/results/lunarlander/throughput.png'
set title 'throughput'
set xlabel 'learner wall-clock (s)'
set ylabel 'per second'
plot 'docs/results/lunarlander/0.lunarlander-s5.throughput.dat' using 1:3 with lines title 'lunarlander-s5 env steps/s', 'docs/results/lunarlander/0.lunarlander-s5.throughput.dat' using 1:4 with lines title 'lunarlander-s5 updates/s', 'docs/results/lunarlander/1.lunarlander-s6.throughput.dat' using 1:3 with lines title 'lunarlander-s6 env steps/s', 'docs/results/lunarlander/1.lunarlander-s6.throughput.dat' using 1:4 with lines title 'lunarlander-s6 updates/s', 'docs/results/lunarlander/2.lunarlander-s7.throughput.dat' using 1:3 with lines title 'lunarlander-s7 env steps/s', 'docs/results/lunarlander/2.lunarlander-s7.throughput.dat' using 1:4 with lines title 'lunarlander-s7 updates/s', 'docs/results/lunarlander/3.lunarlander-s8.throughput.dat' using 1:3 with lines title 'lunarlander-s8 env steps/s', 'docs/results/lunarlander/3.lunarlander-s8.throughput.dat' using 1:4 with lines title 'lunarlander-s8 updates/s', 'docs/results/lunarlander/4.lunarlander-s9.throughput.dat' using 1:3 with lines title 'lunarlander-s9 env steps/s', 'docs/results/lunarlander/4.lunarlander-s9.throughput.dat' using 1:4 with lines title 'lunarlander-s9 updates/s'
